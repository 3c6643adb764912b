const { src, dest } = require('gulp');

// tsc compiles the code; the icons (SVG) and codex files are copied beside it.
function buildIcons() {
	return src(['icons/**/*.svg', 'nodes/**/*.{png,svg}', 'credentials/**/*.{png,svg}'], {
		base: '.',
		encoding: false,
	}).pipe(dest('dist'));
}

exports['build:icons'] = buildIcons;
