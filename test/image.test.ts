import {
	binaryBytes,
	loadOptionsContext,
	resolveCredentialExpression,
	runNode,
} from './helpers/engine';

import { request } from 'undici';

import { GenerationServiceApi } from '../credentials/GenerationServiceApi.credentials';
import { GenerationServiceImage } from '../nodes/GenerationServiceImage/GenerationServiceImage.node';
import type { Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const node = new GenerationServiceImage();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: { __rl: true, mode: 'list', value: 'flux-schnell' },
	prompt: 'A lighthouse at dawn',
	...extra,
});
const imageRequests = () => sandbox.requestsTo('POST', '/v1/generations/image');
const gaps = (times: number[]) => times.slice(1).map((time, i) => time - times[i]);

useSandbox({}, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});

describe('generate', () => {
	it('sends every field with the spec name and returns the result with the PNG as binary', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				model: { __rl: true, mode: 'id', value: 'flux-kontext' },
				additionalFields: {
					negativePrompt: 'people',
					aspectRatio: '16:9',
					imageSize: '320x200',
					seed: 42,
					image: 'https://example.com/source.png',
					modelParameters: '{"steps": 30}',
				},
			}),
		});
		expect(result.error).toBeUndefined();
		const [sent] = imageRequests();
		expect(sent.headers.authorization).toBe(`Bearer ${sandbox.apiKey}`);
		expect(sent.headers['idempotency-key']).toMatch(/^n8n-[0-9a-f]{40}$/);
		expect(sent.body).toEqual({
			model: 'flux-kontext',
			prompt: 'A lighthouse at dawn',
			negative_prompt: 'people',
			aspect_ratio: '16:9',
			image_size: '320x200',
			seed: 42,
			image: 'https://example.com/source.png',
			steps: 30,
		});

		const [item] = result.items;
		expect(item.json).toMatchObject({ status: 'completed', modality: 'image', model: 'flux-kontext' });
		expect(item.json.metadata).toEqual({ width: 320, height: 200, seed: 42 });
		expect(item.pairedItem).toEqual({ item: 0 });
		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'image/png', fileExtension: 'png', fileName: `${item.json.id}.png` });
		const served = Buffer.from(await (await request(String(item.json.url))).body.arrayBuffer());
		const stored = await binaryBytes(binary);
		expect(stored.equals(served)).toBe(true);
		expect(stored.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
		// IHDR holds the size the service reported.
		expect([stored.readUInt32BE(16), stored.readUInt32BE(20)]).toEqual([320, 200]);
		expect(sandbox.chargesFor(sent.headers['idempotency-key'])).toHaveLength(1);
	});

	it('names the binary field and the MIME type and extension of a JPEG model', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				model: { __rl: true, mode: 'id', value: 'seedream-jpeg' },
				options: { binaryPropertyName: 'picture' },
			}),
		});
		const { picture } = result.items[0].binary!;
		expect(picture).toMatchObject({ mimeType: 'image/jpeg', fileExtension: 'jpg' });
		expect((await binaryBytes(picture)).subarray(0, 2).toString('hex')).toBe('ffd8');
	});

	it('leaves out the binary when Download Output is off', async () => {
		const result = await runNode(node, { credentials, parameters: generate({ download: false }) });
		expect(result.items[0].binary).toBeUndefined();
		expect(result.items[0].json.url).toMatch(/^http/);
		expect(sandbox.requestsTo('GET', '/files/')).toHaveLength(0);
	});
});

describe('estimate', () => {
	it('returns the estimate, sends confirm: false and charges nothing', async () => {
		const before = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, {
			credentials,
			parameters: { ...generate(), operation: 'estimate', model: { __rl: true, mode: 'id', value: 'flux-pro' } },
		});
		expect(result.items[0].json).toEqual({ estimated_cost: { micro: 48_000, display: '$0.048000' } });
		expect(imageRequests()[0].body).toMatchObject({ confirm: false, model: 'flux-pro' });
		expect(sandbox.charges()).toHaveLength(before);
		expect(sandbox.balanceMicro()).toBe(balance);
	});
});

describe('validation before any request', () => {
	it.each([
		[{ imageSize: '1024 by 768' }, /Image Size.*imageSize.*"1024 by 768".*\[item 0\]/, /width x height/],
		[{ aspectRatio: '2:1' }, /Aspect Ratio.*aspectRatio.*"2:1".*\[item 0\]/, /1:1, 16:9, 9:16, 4:3, 3:4/],
		[{ seed: 1.5 }, /Seed.*seed.*1\.5.*\[item 0\]/, /whole number/],
		[{ image: 'ftp://example.com/x.png' }, /Source Image URL.*image.*\[item 0\]/, /http/],
		[{ modelParameters: '[1, 2]' }, /Model Parameters.*\[item 0\]/, /JSON object/],
	])('refuses %j with no request reaching the sandbox', async (additionalFields, message, allowed) => {
		const result = await runNode(node, { credentials, parameters: generate({ additionalFields }) });
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(allowed);
		expect(sandbox.requests).toHaveLength(0);
	});

	it('checks values that arrive through expressions, and refuses the whole batch before spending', async () => {
		const result = await runNode(node, {
			credentials,
			items: [{ ratio: '1:1' }, { ratio: '1:1' }, { ratio: 'wide' }],
			parameters: generate({ additionalFields: { aspectRatio: '={{ $json.ratio }}' } }),
		});
		expect(result.error?.message).toMatch(/"wide".*\[item 2\]/);
		expect(sandbox.requests).toHaveLength(0);
	});

	it('refuses an empty prompt', async () => {
		const result = await runNode(node, { credentials, parameters: generate({ prompt: '  ' }) });
		expect(result.error?.message).toMatch(/prompt is empty \[item 0\]/);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('retries (§7)', () => {
	it('retries 5xx after 1 s, 2 s and 4 s with one Idempotency-Key, and charges once', async () => {
		sandbox.fault({ path: '/v1/generations/image', kind: 'status', status: 503, count: 3 });
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(result.error).toBeUndefined();
		const attempts = imageRequests();
		expect(attempts.map((r) => r.status)).toEqual([503, 503, 503, 200]);
		const [first, second, third] = gaps(attempts.map((r) => r.receivedAt));
		expect(first).toBeGreaterThanOrEqual(1000);
		expect(first).toBeLessThan(1500);
		expect(second).toBeGreaterThanOrEqual(2000);
		expect(second).toBeLessThan(2500);
		expect(third).toBeGreaterThanOrEqual(4000);
		expect(third).toBeLessThan(4500);
		const keys = new Set(attempts.map((r) => r.headers['idempotency-key']));
		expect(keys.size).toBe(1);
		expect(sandbox.chargesFor([...keys][0])).toHaveLength(1);
	}, 20_000);

	it('gives up after 3 retries with the service message', async () => {
		sandbox.fault({ path: '/v1/generations/image', kind: 'status', status: 500, count: 10 });
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(imageRequests()).toHaveLength(4);
		expect(result.error?.message).toMatch(/\[item 0\]$/);
		expect(result.error?.description).toMatch(/Code: server_error · HTTP status: 500/);
		expect(result.error?.description).toMatch(/Tried 4 times/);
	}, 20_000);

	it.each([
		['seconds', () => '2', 2000, 2600],
		['an HTTP date', () => new Date(Date.now() + 3000).toUTCString(), 1000, 3100],
	])('honours Retry-After given in %s', async (_label, retryAfter, min, max) => {
		sandbox.fault({ path: '/v1/generations/image', kind: 'status', status: 429, retryAfter: retryAfter(), count: 1 });
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(result.error).toBeUndefined();
		const [gap] = gaps(imageRequests().map((r) => r.receivedAt));
		expect(gap).toBeGreaterThanOrEqual(min);
		expect(gap).toBeLessThan(max);
	}, 15_000);

	it('replays instead of charging again when the answer was lost (reset, malformed JSON, stall)', async () => {
		sandbox.fault({ path: '/v1/generations/image', kind: 'reset', count: 1 });
		sandbox.fault({ path: '/v1/generations/image', kind: 'malformed', count: 1 });
		sandbox.fault({ path: '/v1/generations/image', kind: 'stall', count: 1 });
		const result = await runNode(node, { credentials, parameters: generate({ options: { requestTimeout: 1 } }) });
		expect(result.error).toBeUndefined();
		const attempts = imageRequests();
		expect(attempts.map((r) => r.fault ?? 'none')).toEqual(['reset', 'malformed', 'stall', 'none']);
		const key = attempts[0].headers['idempotency-key'];
		expect(attempts.every((r) => r.headers['idempotency-key'] === key)).toBe(true);
		expect(sandbox.chargesFor(key)).toHaveLength(1);
		expect(result.items[0].json.id).toBe(sandbox.chargesFor(key)[0].id);
	}, 20_000);

	it.each([
		[400, 'status fault', () => sandbox.fault({ path: '/v1/generations/image', kind: 'status', status: 400, count: 5 })],
		[402, 'empty balance', () => sandbox.setBalance(0)],
	])('never retries %i (%s)', async (status, _label, arrange) => {
		const balance = sandbox.balanceMicro();
		arrange();
		const result = await runNode(node, { credentials, parameters: generate() });
		sandbox.setBalance(balance);
		expect(imageRequests()).toHaveLength(1);
		expect(result.error?.httpCode).toBe(String(status));
	});

	it('never retries 401 and shows the service message without the key', async () => {
		const result = await runNode(node, { credentials: { ...credentials, apiKey: 'gs_test_wrong' }, parameters: generate() });
		expect(imageRequests()).toHaveLength(1);
		expect(result.error?.httpCode).toBe('401');
		expect(JSON.stringify(result.run)).not.toContain('gs_test_wrong');
	});
});

describe('billing errors', () => {
	it('shows the required and available amounts of insufficient_credits', async () => {
		const balance = sandbox.balanceMicro();
		sandbox.setBalance(10_000);
		const result = await runNode(node, {
			credentials,
			parameters: generate({ model: { __rl: true, mode: 'id', value: 'flux-pro' } }),
		});
		sandbox.setBalance(balance);
		expect(result.error?.message).toMatch(/48000 microdollars.*10000 microdollars.*\[item 0\]/);
		expect(result.error?.description).toMatch(/Code: insufficient_credits · HTTP status: 402/);
	});

	it('shows a cap\'s details as sent', async () => {
		const capped = sandbox.createKey({ name: 'capped', scopes: ['generate'], capTotalMicro: 1000 });
		const result = await runNode(node, { credentials: { ...credentials, apiKey: capped.key }, parameters: generate() });
		expect(result.error?.httpCode).toBe('402');
		expect(result.error?.description).toMatch(/Code: spending_cap_reached/);
		expect(result.error?.description).toMatch(/"level":"key".*"micro":1000/);
		expect(JSON.stringify(result.run)).not.toContain(capped.key);
	});
});

describe('idempotency keys', () => {
	it('are distinct per item, per run of the node and per execution', async () => {
		const first = await runNode(node, { credentials, items: [{}, {}], runs: 2, parameters: generate({ download: false }) });
		expect(first.runs).toHaveLength(2);
		await runNode(node, { credentials, parameters: generate({ download: false }) });
		const keys = imageRequests().map((r) => r.headers['idempotency-key']);
		expect(keys).toHaveLength(5);
		expect(new Set(keys).size).toBe(5);
		expect(sandbox.charges().filter((c) => keys.includes(c.idempotency_key!))).toHaveLength(5);
	});

	it('stay the same under n8n\'s Retry On Fail, so the retried item is not charged twice', async () => {
		// Every transport attempt of the first try loses its answer after the charge; n8n then runs the node again.
		sandbox.fault({ path: '/v1/generations/image', kind: 'reset', count: 4 });
		const result = await runNode(node, {
			credentials,
			retryOnFail: { maxTries: 2, waitBetweenTries: 0 },
			parameters: generate({ download: false }),
		});
		expect(result.error).toBeUndefined();
		const attempts = imageRequests();
		expect(attempts).toHaveLength(5);
		const key = attempts[0].headers['idempotency-key'];
		expect(attempts.every((r) => r.headers['idempotency-key'] === key)).toBe(true);
		expect(sandbox.chargesFor(key)).toHaveLength(1);
	}, 20_000);

	it('can be set per item, and a key shared by two items is refused before any request', async () => {
		const result = await runNode(node, {
			credentials,
			items: [{ order: 'a' }, { order: 'a' }],
			parameters: generate({ options: { idempotencyKey: '={{ "order-" + $json.order }}' } }),
		});
		expect(result.error?.message).toMatch(/Items 0 and 1 use the same Idempotency Key \[item 1\]/);
		expect(sandbox.requests).toHaveLength(0);

		const ok = await runNode(node, {
			credentials,
			items: [{ order: `b-${Date.now()}` }],
			parameters: generate({ download: false, options: { idempotencyKey: '={{ "order-" + $json.order }}' } }),
		});
		expect(ok.error).toBeUndefined();
		expect(imageRequests()[0].headers['idempotency-key']).toMatch(/^order-b-/);
	});
});

describe('Continue On Fail', () => {
	it('keeps the other items\' results and pairs the error with its item', async () => {
		const result = await runNode(node, {
			credentials,
			continueOnFail: true,
			items: [{ size: '64x64' }, { size: 'big' }, { size: '32x32' }],
			parameters: generate({ additionalFields: { imageSize: '={{ $json.size }}' } }),
		});
		expect(result.error).toBeUndefined();
		expect(result.items).toHaveLength(3);
		expect(result.items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(result.items[1].json).toEqual({
			error: expect.stringMatching(/Image Size.*"big".*\[item 1\]/),
			code: 'invalid_parameter',
			status: null,
		});
		expect(result.items[0].json.metadata).toMatchObject({ width: 64, height: 64 });
		expect(result.items[2].json.metadata).toMatchObject({ width: 32, height: 32 });
		expect(result.items[0].binary?.data.mimeType).toBe('image/png');
		expect(imageRequests()).toHaveLength(2);
	});

	it('puts the service error on the item as { error, code, status }', async () => {
		const balance = sandbox.balanceMicro();
		sandbox.setBalance(0);
		const result = await runNode(node, { credentials, continueOnFail: true, parameters: generate() });
		sandbox.setBalance(balance);
		expect(result.items[0].json).toEqual({
			error: expect.stringMatching(/Insufficient credits.*\[item 0\]/),
			code: 'insufficient_credits',
			status: 402,
		});
	});
});

describe('the API key', () => {
	it('appears in no output or error, whatever failed', async () => {
		const unreachable = { apiKey: sandbox.apiKey, baseUrl: 'http://127.0.0.1:9' };
		const refused = await runNode(node, { credentials: unreachable, parameters: generate() });
		expect(refused.error?.message).toMatch(/did not answer: the connection was refused.*\[item 0\]/);
		expect(refused.error?.description).toMatch(/Network error: ECONNREFUSED/);
		sandbox.fault({ path: '/v1/generations/image', kind: 'status', status: 400, count: 1 });
		const rejected = await runNode(node, { credentials, parameters: generate() });
		const succeeded = await runNode(node, { credentials, parameters: generate() });
		for (const result of [refused, rejected, succeeded]) {
			expect(JSON.stringify(result.run)).not.toContain(sandbox.apiKey);
		}
	}, 20_000);
});

describe('the model list', () => {
	it('offers the image models from GET /v1/models with their price, and filters by the search text', async () => {
		const context = loadOptionsContext(node, { credentials, parameters: generate() });
		const all = await node.methods.listSearch.searchModels.call(context);
		expect(all.results.map((r) => r.value).sort()).toEqual(['flux-kontext', 'flux-pro', 'flux-schnell', 'seedream-jpeg']);
		expect(all.results.find((r) => r.value === 'flux-pro')?.name).toMatch(/flux-pro.*\$0\.048000 per image/);
		const found = await node.methods.listSearch.searchModels.call(context, 'kontext');
		expect(found.results.map((r) => r.value)).toEqual(['flux-kontext']);
		expect(sandbox.requestsTo('GET', '/v1/models')[0].headers.authorization).toBe(`Bearer ${sandbox.apiKey}`);
	});
});

describe('the credential', () => {
	it('tests with a free request that passes with the key and fails with a wrong one', async () => {
		const { test, authenticate } = new GenerationServiceApi();
		expect(test.request.url).toBe('/v1/models');
		// The credential's own expressions, resolved by n8n's expression engine as the credential test does.
		const resolve = (value: string, apiKey: string) =>
			resolveCredentialExpression(value, { apiKey, baseUrl: `${sandbox.baseUrl}/v1/` });
		const baseURL = resolve(String(test.request.baseURL), sandbox.apiKey);
		expect(baseURL).toBe(sandbox.baseUrl);
		const charges = sandbox.charges().length;
		for (const [apiKey, status] of [[sandbox.apiKey, 200], ['gs_test_wrong', 401]] as const) {
			const authorization = resolve(authenticate.properties.headers!.Authorization as string, apiKey);
			const response = await request(`${baseURL}${test.request.url}`, { headers: { authorization } });
			await response.body.dump();
			expect(response.statusCode).toBe(status);
		}
		expect(sandbox.charges()).toHaveLength(charges);
	});
});
