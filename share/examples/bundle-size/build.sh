#!/bin/sh
# The build (readonly: the command names it): concatenates src/*.js into dist/bundle.js and
# prints its size in bytes.
set -e
mkdir -p dist
cat src/*.js > dist/bundle.js
echo "METRIC bytes=$(wc -c < dist/bundle.js | tr -d ' ')"
