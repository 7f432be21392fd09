"""A package whose byte-compilation is timed."""
