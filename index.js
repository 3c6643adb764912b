// n8n loads this package's nodes and credentials from the paths in package.json "n8n".
module.exports = {};
