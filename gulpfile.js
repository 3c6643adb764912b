const { src, dest } = require('gulp');

// tsc compiles the code; the icons (SVG) and the codex files (*.node.json) are copied beside it.
function buildIcons() {
	return src(['icons/**/*.svg', 'nodes/**/*.{png,svg,node.json}', 'credentials/**/*.{png,svg}'], {
		base: '.',
		encoding: false,
	}).pipe(dest('dist'));
}

exports['build:icons'] = buildIcons;
