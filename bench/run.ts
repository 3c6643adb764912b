/**
 * `npm run bench`: the pack's speed and memory, measured side by side in one run, as ratios.
 * Everything runs through n8n's engine (test/helpers/engine) against a sandbox on loopback.
 *
 *  1. Many items: 20 video jobs of 2 s each, with Items in Flight 1, 5 and 20. Jobs being waited
 *     for hold no slot, so even 1 in flight should overlap the waiting; the ratio to a sequential
 *     run (20 × one job) is the speed-up.
 *  2. Image batch: 50 images at concurrency 1 and 5 (sandbox answers at once: transport overhead).
 *  3. Memory: a 256 MB video downloaded in n8n's filesystem binary mode; peak growth of the
 *     process's memory as a fraction of the file size (a Buffer copy would be ≥ 1.0).
 */
import { initEngine, runNode, shutdownEngine } from '../test/helpers/engine';

import { GenerationServiceImage } from '../nodes/GenerationServiceImage/GenerationServiceImage.node';
import { GenerationServiceVideo } from '../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import { startSandbox } from '../test/sandbox';

const JOB_MS = 2000;
const VIDEO_ITEMS = 20;
const IMAGE_ITEMS = 50;
const FILE_BYTES = 256 * 1024 * 1024;

async function timed(run: () => Promise<{ error?: { message: string } }>): Promise<number> {
	const start = performance.now();
	const result = await run();
	if (result.error) throw new Error(result.error.message);
	return performance.now() - start;
}

async function main() {
	await initEngine('filesystem');
	const sandbox = await startSandbox({ jobDurationMs: { video: JOB_MS }, rateLimitPerMinute: 100_000 });
	const credentials = { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl };
	const video = new GenerationServiceVideo();
	const image = new GenerationServiceImage();
	const rows: string[][] = [];

	const videoRun = (concurrency: number, items: number) =>
		timed(() =>
			runNode(video, {
				credentials,
				items: Array.from({ length: items }, (_, n) => ({ n })),
				parameters: {
					operation: 'generate',
					model: { __rl: true, mode: 'id', value: 'kling-2.1' },
					prompt: '={{ "clip " + $json.n }}',
					download: false,
					options: { concurrency },
				},
			}),
		);
	const single = await videoRun(1, 1);
	const sequential = single * VIDEO_ITEMS;
	rows.push(['20 video jobs, one after another (20 × 1 job)', `${(sequential / 1000).toFixed(1)} s`, '1.00']);
	for (const concurrency of [1, 5, 20]) {
		const ms = await videoRun(concurrency, VIDEO_ITEMS);
		rows.push([`20 video jobs, Items in Flight ${concurrency}`, `${(ms / 1000).toFixed(1)} s`, (sequential / ms).toFixed(2)]);
	}

	const imageRun = (concurrency: number) =>
		timed(() =>
			runNode(image, {
				credentials,
				items: Array.from({ length: IMAGE_ITEMS }, (_, n) => ({ n })),
				parameters: {
					operation: 'generate',
					model: { __rl: true, mode: 'id', value: 'flux-schnell' },
					prompt: '={{ "image " + $json.n }}',
					additionalFields: { imageSize: '256x256' },
					options: { concurrency },
				},
			}),
		);
	const imageOne = await imageRun(1);
	rows.push([`${IMAGE_ITEMS} images with download, Items in Flight 1`, `${(imageOne / 1000).toFixed(2)} s`, '1.00']);
	const imageFive = await imageRun(5);
	rows.push([`${IMAGE_ITEMS} images with download, Items in Flight 5`, `${(imageFive / 1000).toFixed(2)} s`, (imageOne / imageFive).toFixed(2)]);

	sandbox.configure({ outputSizeBytes: { video: FILE_BYTES }, jobDurationMs: { video: 100 } });
	global.gc?.();
	const base = process.memoryUsage();
	let peakRss = base.rss;
	let peakBuffers = base.arrayBuffers;
	const sampler = setInterval(() => {
		const now = process.memoryUsage();
		peakRss = Math.max(peakRss, now.rss);
		peakBuffers = Math.max(peakBuffers, now.arrayBuffers);
	}, 20);
	const downloadMs = await timed(() =>
		runNode(video, {
			credentials,
			parameters: { operation: 'generate', model: { __rl: true, mode: 'id', value: 'kling-2.1' }, prompt: 'big' },
		}),
	);
	clearInterval(sampler);
	const growth = Math.max(peakRss - base.rss, peakBuffers - base.arrayBuffers);
	rows.push([
		'256 MB video to disk (filesystem mode): peak memory growth / file size',
		`${(growth / 1024 / 1024).toFixed(0)} MB in ${(downloadMs / 1000).toFixed(1)} s`,
		(growth / FILE_BYTES).toFixed(3),
	]);

	await sandbox.stop();
	await shutdownEngine();
	const widths = [0, 1, 2].map((c) => Math.max(...[['measure', 'value', 'ratio'], ...rows].map((r) => r[c].length)));
	for (const row of [['measure', 'value', 'ratio'], ...rows]) {
		console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
	}
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
