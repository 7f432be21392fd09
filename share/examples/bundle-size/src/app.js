// The application: its bundle is what gets shipped.
function formatPrice(amount, currency) {
  // Format an amount of money for display.
  const rounded = Math.round(amount * 100) / 100;
  return currency + " " + rounded.toFixed(2);
}

function formatPrices(amounts, currency) {
  const result = [];
  for (let index = 0; index < amounts.length; index = index + 1) {
    result.push(formatPrice(amounts[index], currency));
  }
  return result;
}

module.exports = { formatPrice, formatPrices };
