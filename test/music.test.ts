import { binaryBytes, runNode } from './helpers/engine';

import { GenerationServiceMusic } from '../nodes/GenerationServiceMusic/GenerationServiceMusic.node';
import { model, pollsOf, servedBytes, until } from './helpers/outputs';
import type { Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const node = new GenerationServiceMusic();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const LYRICS = '[Verse] City lights are calling\n[Chorus] We run until the morning';
const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: model('suno-v4'),
	prompt: LYRICS,
	...extra,
});
const musicPosts = () => sandbox.requestsTo('POST', '/v1/generations/music');

useSandbox({ jobDurationMs: { music: 300 }, rateLimitPerMinute: 100_000 }, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});

describe('music generate', () => {
	it('sends every field with the spec name, waits for the job and returns the MP3 as binary', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				additionalFields: {
					genre: 'synthwave',
					duration: 30,
					instrumental: true,
					webhookUrl: 'http://127.0.0.1:9/webhook/abc/webhook',
					modelParameters: '{"tempo_bpm": 118}',
				},
			}),
		});
		expect(result.error).toBeUndefined();
		const [post] = musicPosts();
		expect(post.body).toEqual({
			model: 'suno-v4',
			prompt: LYRICS,
			genre: 'synthwave',
			duration: 30,
			instrumental: true,
			webhook_url: 'http://127.0.0.1:9/webhook/abc/webhook',
			tempo_bpm: 118,
		});

		const [item] = result.items;
		const id = String(item.json.id);
		expect(item.json).toEqual(sandbox.job(id));
		expect(item.json).toMatchObject({
			status: 'completed',
			modality: 'music',
			cost: { micro: 18_000, currency: 'USD' },
			metadata: { duration: 30, title: 'City Lights Are Calling We', sample_rate: 44_100 },
		});
		expect(pollsOf(sandbox, id).length).toBeGreaterThanOrEqual(1);

		const binary = item.binary!.data;
		// audio/mpeg is .mp3, not the .mpga that the mime-types table would give.
		expect(binary).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3', fileName: `${id}.mp3` });
		const stored = await binaryBytes(binary);
		expect(stored.equals(await servedBytes(String(item.json.url)))).toBe(true);
		expect(stored.subarray(0, 3).toString('latin1')).toBe('ID3');
		expect(sandbox.chargesFor(post.headers['idempotency-key'])).toHaveLength(1);
	});

	it('sends instrumental false when it is switched off, and a value given by an expression as a boolean', async () => {
		await runNode(node, {
			credentials,
			items: [{ vocals: true }],
			parameters: generate({
				operation: 'estimate',
				additionalFields: { instrumental: '={{ $json.vocals ? "false" : "true" }}' },
			}),
		});
		expect(musicPosts()[0].body).toMatchObject({ instrumental: false, confirm: false });
	});
});

describe('music estimate', () => {
	it('returns only the estimate, sends confirm: false and charges nothing', async () => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, {
			credentials,
			parameters: generate({ operation: 'estimate', model: model('udio-long'), additionalFields: { duration: 240 } }),
		});
		expect(result.items[0].json).toEqual({ estimated_cost: { micro: 230_400, display: '$0.230400' } });
		expect(musicPosts()[0].body).toEqual({ model: 'udio-long', prompt: LYRICS, duration: 240, confirm: false });
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});
});

describe('music validation before any request', () => {
	it.each([
		['instrumental', '={{ "maybe" }}', /Instrumental.*instrumental.*"maybe".*\[item 0\]/, /true or false/],
		['webhookUrl', 'not a url', /Webhook URL.*webhookUrl.*"not a url".*\[item 0\]/, /http:\/\/ or https:\/\//],
		['duration', 0, /Duration.*duration.*0.*\[item 0\]/, /positive number/],
		['modelParameters', '{"tempo": ', /Model Parameters.*modelParameters.*\[item 0\]/, /JSON object/],
	])('refuses %s = %j with no request sent', async (field, value, message, allowed) => {
		const result = await runNode(node, { credentials, parameters: generate({ additionalFields: { [field]: value } }) });
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(allowed);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('a failed music job', () => {
	it('is an error of the item that carries the reason the service gave', async () => {
		sandbox.failNextJobs(1, 'lyrics rejected by the model');
		const result = await runNode(node, { credentials, parameters: generate() });
		expect(result.error?.message).toMatch(/lyrics rejected by the model \[item 0\]/);
		expect(result.error?.description).toMatch(/generation_failed/);
	});
});

describe('music getJob', () => {
	it('returns the submit response at once, then downloads the completed job', async () => {
		const submitted = await runNode(node, { credentials, parameters: generate({ waitForCompletion: false }) });
		const id = String(submitted.items[0].json.id);
		expect(submitted.items[0].json).toEqual({ id, status: 'queued', estimated_cost: { micro: 72_000, display: '$0.072000' } });
		expect(pollsOf(sandbox, id)).toHaveLength(0);
		await until(() => sandbox.job(id)?.status === 'completed');
		const done = await runNode(node, {
			credentials,
			parameters: { operation: 'getJob', jobId: id, options: { binaryPropertyName: 'song' } },
		});
		expect(done.items[0].json).toEqual(sandbox.job(id));
		const binary = done.items[0].binary!.song;
		expect(binary).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3', fileName: `${id}.mp3` });
		expect((await binaryBytes(binary)).equals(await servedBytes(String(done.items[0].json.url)))).toBe(true);
	});

	it('returns the job without binary when Download Output is off', async () => {
		const submitted = await runNode(node, { credentials, parameters: generate({ waitForCompletion: false }) });
		const id = String(submitted.items[0].json.id);
		await until(() => sandbox.job(id)?.status === 'completed');
		const done = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: id, download: false } });
		expect(done.items[0].json.status).toBe('completed');
		expect(done.items[0].binary).toBeUndefined();
		expect(sandbox.requestsTo('GET', '/files/')).toHaveLength(0);
	});
});

describe('the music node in the editor', () => {
	it('tells that section markers work in the prompt, and has the fields of §4.3', () => {
		const prompt = node.description.properties.find((p) => p.name === 'prompt')!;
		expect(`${prompt.description} ${prompt.placeholder}`).toMatch(/\[Verse\].*\[Chorus\]/);
		const fields = node.description.properties.find((p) => p.name === 'additionalFields')!.options as Array<{ name: string }>;
		expect(fields.map((f) => f.name).sort()).toEqual(['duration', 'genre', 'instrumental', 'modelParameters', 'webhookUrl']);
	});
});
