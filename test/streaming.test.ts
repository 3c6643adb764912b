/**
 * n8n's filesystem binary mode is chosen per process, so this file has it to itself: a 256 MB video
 * goes from the sandbox's URL to disk through our download, and process memory shows it was streamed.
 */
import { BinaryDataService, Container, initEngine, runNode, shutdownEngine } from './helpers/engine';

import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';

import { GenerationServiceVideo } from '../nodes/GenerationServiceVideo/GenerationServiceVideo.node';
import { model, servedDigest } from './helpers/outputs';
import type { Sandbox } from './sandbox';
import { startSandbox } from './sandbox';

const SIZE = 256 * 1024 * 1024;
const MB = 1024 * 1024;
const node = new GenerationServiceVideo();
let sandbox: Sandbox;

async function fileDigest(path: string): Promise<string> {
	const hash = createHash('sha256');
	for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
	return hash.digest('hex');
}

beforeAll(async () => {
	await initEngine('filesystem');
	sandbox = await startSandbox({ jobDurationMs: { video: 200 }, outputSizeBytes: { video: SIZE } });
});
afterAll(async () => {
	await sandbox.stop();
	await shutdownEngine();
});

it('writes a 256 MB video to n8n\'s filesystem binary data without holding it in memory', async () => {
	const before = process.memoryUsage();
	const peak = { arrayBuffers: before.arrayBuffers, rss: before.rss, heapUsed: before.heapUsed };
	const sample = () => {
		const now = process.memoryUsage();
		peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers);
		peak.rss = Math.max(peak.rss, now.rss);
		peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed);
	};
	const sampler = setInterval(sample, 5);
	let result;
	try {
		result = await runNode(node, {
			credentials: { apiKey: sandbox.apiKey, baseUrl: sandbox.baseUrl },
			parameters: { operation: 'generate', model: model('kling-2.1'), prompt: 'A long, heavy video' },
		});
	} finally {
		clearInterval(sampler);
		sample();
	}
	expect(result.error).toBeUndefined();
	const [item] = result.items;
	const id = String(item.json.id);
	const binary = item.binary!.data;
	expect(binary).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4', fileName: `${id}.mp4` });
	// Stored on disk by n8n, referenced by id: nothing of the file is in the item.
	expect(binary.id).toMatch(/^filesystem(-v2)?:/);
	expect(binary.data).toBe('filesystem-v2');

	const service = Container.get(BinaryDataService);
	const fileId = binary.id!.slice(binary.id!.indexOf(':') + 1);
	const path = service.getPath(binary.id!);
	expect(path.endsWith(fileId)).toBe(true);
	expect(statSync(path).size).toBe(SIZE);
	expect((await service.getMetadata(binary.id!)).fileSize).toBe(SIZE);

	const served = await servedDigest(String(item.json.url));
	expect(served.size).toBe(SIZE);
	const stored = await fileDigest(path);
	expect(stored).toBe(served.sha256);

	const growth = {
		arrayBuffers: (peak.arrayBuffers - before.arrayBuffers) / MB,
		rss: (peak.rss - before.rss) / MB,
		heapUsed: (peak.heapUsed - before.heapUsed) / MB,
	};
	console.log(
		`streamed ${SIZE / MB} MB, sha256 ${stored.slice(0, 16)}…; peak growth: arrayBuffers ${growth.arrayBuffers.toFixed(1)} MB, ` +
			`rss ${growth.rss.toFixed(1)} MB, heapUsed ${growth.heapUsed.toFixed(1)} MB`,
	);
	// A Buffer of the file anywhere on the way (ours or n8n's) would add 256 MB here.
	expect(growth.arrayBuffers).toBeLessThan(100);
	expect(growth.heapUsed).toBeLessThan(100);
}, 60_000);
