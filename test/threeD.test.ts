import { binaryBytes, runNode } from './helpers/engine';

import { GenerationServiceThreeD } from '../nodes/GenerationServiceThreeD/GenerationServiceThreeD.node';
import { model, pollsOf, servedBytes, until } from './helpers/outputs';
import type { Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const node = new GenerationServiceThreeD();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: model('trellis'),
	prompt: 'A low-poly wooden treasure chest',
	...extra,
});
const threeDPosts = () => sandbox.requestsTo('POST', '/v1/generations/threeD');

useSandbox({ jobDurationMs: { threeD: 300 }, rateLimitPerMinute: 100_000 }, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});

describe('3D generate', () => {
	it('sends model, prompt and Model Parameters merged into the body, and returns the GLB as binary', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				additionalFields: {
					modelParameters: '{"image": "https://example.com/chest.png", "texture": true, "face_count": 20000, "confirm": true}',
				},
			}),
		});
		expect(result.error).toBeUndefined();
		const [post] = threeDPosts();
		// `confirm` is the operation's to decide, so Model Parameters cannot set it.
		expect(post.body).toEqual({
			model: 'trellis',
			prompt: 'A low-poly wooden treasure chest',
			image: 'https://example.com/chest.png',
			texture: true,
			face_count: 20000,
		});

		const [item] = result.items;
		const id = String(item.json.id);
		expect(item.json).toEqual(sandbox.job(id));
		expect(item.json).toMatchObject({ status: 'completed', modality: 'threeD', cost: { micro: 60_000, currency: 'USD' } });
		expect(pollsOf(sandbox, id).length).toBeGreaterThanOrEqual(1);
		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'model/gltf-binary', fileExtension: 'glb', fileName: `${id}.glb` });
		const stored = await binaryBytes(binary);
		expect(stored.equals(await servedBytes(String(item.json.url)))).toBe(true);
		expect(stored.subarray(0, 4).toString('latin1')).toBe('glTF');
		expect(sandbox.chargesFor(post.headers['idempotency-key'])).toHaveLength(1);
	});

	it('takes Model Parameters given as an object by an expression', async () => {
		await runNode(node, {
			credentials,
			items: [{ style: 'voxel' }],
			parameters: generate({
				operation: 'estimate',
				additionalFields: { modelParameters: '={{ { style: $json.style, seed: 7 } }}' },
			}),
		});
		expect(threeDPosts()[0].body).toEqual({
			model: 'trellis',
			prompt: 'A low-poly wooden treasure chest',
			style: 'voxel',
			seed: 7,
			confirm: false,
		});
	});
});

describe('3D estimate', () => {
	it('returns only the estimate, sends confirm: false and charges nothing', async () => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, { credentials, parameters: generate({ operation: 'estimate', model: model('hunyuan3d') }) });
		expect(result.items[0].json).toEqual({ estimated_cost: { micro: 120_000, display: '$0.120000' } });
		expect(threeDPosts()[0].body).toEqual({ model: 'hunyuan3d', prompt: 'A low-poly wooden treasure chest', confirm: false });
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});
});

describe('3D validation before any request', () => {
	it.each([
		[{ modelParameters: '["texture"]' }, /Model Parameters.*modelParameters.*\[item 0\]/, /JSON object/],
		[{ modelParameters: 'texture=true' }, /Model Parameters.*modelParameters.*"texture=true".*\[item 0\]/, /JSON object/],
	])('refuses %j with no request sent', async (additionalFields, message, allowed) => {
		const result = await runNode(node, { credentials, parameters: generate({ additionalFields }) });
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(allowed);
		expect(sandbox.requests).toHaveLength(0);
	});

	it('refuses a blank prompt and a model that an expression leaves empty', async () => {
		const noPrompt = await runNode(node, { credentials, parameters: generate({ prompt: ' ' }) });
		expect(noPrompt.error?.message).toMatch(/prompt is empty \[item 0\]/);
		const noModel = await runNode(node, {
			credentials,
			items: [{ model: '' }],
			parameters: generate({ model: model('={{ $json.model }}') }),
		});
		expect(noModel.error?.message).toMatch(/No model is selected \[item 0\]/);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('a failed 3D job', () => {
	it('is an error of the item that carries the reason the service gave', async () => {
		sandbox.failNextJobs(1, 'mesh reconstruction diverged');
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(result.error?.message).toMatch(/mesh reconstruction diverged \[item 0\]/);
	});
});

describe('3D getJob', () => {
	it('returns the submit response at once, then downloads the completed GLB', async () => {
		const submitted = await runNode(node, { credentials, parameters: generate({ waitForCompletion: false }) });
		const id = String(submitted.items[0].json.id);
		expect(submitted.items[0].json).toEqual({ id, status: 'queued', estimated_cost: { micro: 60_000, display: '$0.060000' } });
		expect(pollsOf(sandbox, id)).toHaveLength(0);
		await until(() => sandbox.job(id)?.status === 'completed');
		const done = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: id } });
		expect(done.items[0].json).toEqual(sandbox.job(id));
		const binary = done.items[0].binary!.data;
		expect(binary).toMatchObject({ mimeType: 'model/gltf-binary', fileExtension: 'glb', fileName: `${id}.glb` });
		expect((await binaryBytes(binary)).equals(await servedBytes(String(done.items[0].json.url)))).toBe(true);
	});
});
