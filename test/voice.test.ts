import { binaryBytes, loadOptionsContext, runNode } from './helpers/engine';

import { GenerationServiceVoice } from '../nodes/GenerationServiceVoice/GenerationServiceVoice.node';
import { model, pollsOf, servedBytes, until } from './helpers/outputs';
import type { Sandbox } from './sandbox';
import { useSandbox } from './helpers/suite';

const node = new GenerationServiceVoice();
let sandbox: Sandbox;
let credentials: { apiKey: string; baseUrl: string };

const TEXT = 'Welcome to our weekly update.';
/** Over the 1 000 characters that the sandbox answers synchronously: long-form text, a job. */
const LONG_TEXT = 'This is the long-form part of the weekly update. '.repeat(25);
const generate = (extra: Record<string, unknown> = {}) => ({
	operation: 'generate',
	model: model('eleven-turbo'),
	prompt: TEXT,
	...extra,
});
const voicePosts = () => sandbox.requestsTo('POST', '/v1/generations/voice');

useSandbox({ jobDurationMs: { voice: 300 }, rateLimitPerMinute: 100_000 }, (started) => {
	sandbox = started;
	credentials = { apiKey: started.apiKey, baseUrl: started.baseUrl };
});

describe('voice generate, short text', () => {
	it('sends every field with the spec name and returns at once, with the voice cost shape and the MP3', async () => {
		const result = await runNode(node, {
			credentials,
			parameters: generate({
				model: model('xtts-clone'),
				additionalFields: {
					voice: 'aria',
					speed: 1.5,
					refAudioUrl: 'https://example.com/my-voice.mp3',
					emotion: 'excited',
					modelParameters: '{"stability": 0.4}',
				},
			}),
		});
		expect(result.error).toBeUndefined();
		const [post] = voicePosts();
		expect(post.body).toEqual({
			model: 'xtts-clone',
			prompt: TEXT,
			voice: 'aria',
			speed: 1.5,
			ref_audio_url: 'https://example.com/my-voice.mp3',
			emotion: 'excited',
			stability: 0.4,
		});
		// Synchronous: no job, so nothing polled.
		expect(sandbox.requestsTo('GET', '/v1/jobs/')).toHaveLength(0);

		const [item] = result.items;
		const id = String(item.json.id);
		expect(id).toMatch(/^gen_/);
		expect(item.json).toMatchObject({
			status: 'completed',
			modality: 'voice',
			model: 'xtts-clone',
			metadata: { duration: 1.29, sample_rate: 44_100, voice: 'aria' },
		});
		// §2.2: the voice cost keeps its names and is passed through as the service sent it.
		expect(item.json.cost).toEqual({ credits_used: 1_740, estimated_credits: 1_740, currency: 'microdollars' });

		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3', fileName: `${id}.mp3` });
		const stored = await binaryBytes(binary);
		expect(stored.equals(await servedBytes(String(item.json.url)))).toBe(true);
		expect(stored.subarray(0, 3).toString('latin1')).toBe('ID3');
		expect(sandbox.chargesFor(post.headers['idempotency-key'])).toHaveLength(1);
	});

	it('takes the voice from an expression (a name typed in, not picked from the list)', async () => {
		const result = await runNode(node, {
			credentials,
			items: [{ speaker: 'kenji' }],
			parameters: generate({ additionalFields: { voice: '={{ $json.speaker }}' } }),
		});
		expect(voicePosts()[0].body).toMatchObject({ voice: 'kenji' });
		expect(result.items[0].json.metadata).toMatchObject({ voice: 'kenji' });
	});
});

describe('voice generate, long text', () => {
	it('is a job that is polled until completed, with the voice cost shape', async () => {
		const result = await runNode(node, { credentials, parameters: generate({ prompt: LONG_TEXT }) });
		expect(result.error).toBeUndefined();
		const [item] = result.items;
		const id = String(item.json.id);
		expect(id).toMatch(/^job_/);
		expect(pollsOf(sandbox, id).length).toBeGreaterThanOrEqual(1);
		expect(item.json).toEqual(sandbox.job(id));
		expect(item.json.status).toBe('completed');
		const price = 30 * LONG_TEXT.length;
		expect(item.json.cost).toEqual({ credits_used: price, estimated_credits: price, currency: 'microdollars' });
		const binary = item.binary!.data;
		expect(binary).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3', fileName: `${id}.mp3` });
		expect((await binaryBytes(binary)).equals(await servedBytes(String(item.json.url)))).toBe(true);
	});

	it('returns the job at once when Wait for Completion is off, and Get Job downloads it later', async () => {
		const submitted = await runNode(node, { credentials, parameters: generate({ prompt: LONG_TEXT, waitForCompletion: false }) });
		const id = String(submitted.items[0].json.id);
		expect(submitted.items[0].json).toMatchObject({ id, status: 'queued', estimated_cost: { micro: 30 * LONG_TEXT.length } });
		expect(pollsOf(sandbox, id)).toHaveLength(0);
		await until(() => sandbox.job(id)?.status === 'completed');
		const done = await runNode(node, { credentials, parameters: { operation: 'getJob', jobId: id } });
		expect(done.items[0].json).toEqual(sandbox.job(id));
		expect(done.items[0].binary?.data).toMatchObject({ mimeType: 'audio/mpeg', fileExtension: 'mp3', fileName: `${id}.mp3` });
	});

	it('surfaces the reason of a failed job', async () => {
		sandbox.failNextJobs(1, 'voice model overloaded');
		const result = await runNode(node, { credentials, parameters: generate({ prompt: LONG_TEXT }) });
		expect(result.error?.message).toMatch(/voice model overloaded \[item 0\]/);
	});
});

describe('voice estimate', () => {
	it('returns only the estimate, sends confirm: false and charges nothing', async () => {
		const charges = sandbox.charges().length;
		const balance = sandbox.balanceMicro();
		const result = await runNode(node, {
			credentials,
			parameters: generate({ operation: 'estimate', prompt: LONG_TEXT, additionalFields: { voice: 'lena' } }),
		});
		expect(result.items[0].json).toEqual({
			estimated_cost: { micro: 30 * LONG_TEXT.length, display: `$${((30 * LONG_TEXT.length) / 1e6).toFixed(6)}` },
		});
		expect(voicePosts()[0].body).toEqual({ model: 'eleven-turbo', prompt: LONG_TEXT, voice: 'lena', confirm: false });
		expect(sandbox.requestsTo('GET', '/v1/jobs/')).toHaveLength(0);
		expect(sandbox.charges()).toHaveLength(charges);
		expect(sandbox.balanceMicro()).toBe(balance);
	});
});

describe('voice validation before any request', () => {
	it.each([
		['speed', 3, /Speed.*speed.*3.*\[item 0\]/, /a number from 0.5 to 2/],
		['speed', 0.1, /Speed.*speed.*0\.1.*\[item 0\]/, /a number from 0.5 to 2/],
		['speed', '={{ "fast" }}', /Speed.*speed.*"fast".*\[item 0\]/, /a number from 0.5 to 2/],
		['emotion', 'angry', /Emotion.*emotion.*"angry".*\[item 0\]/, /neutral, happy, sad, excited/],
		['refAudioUrl', 'my-voice.mp3', /Reference Audio URL.*refAudioUrl.*"my-voice.mp3".*\[item 0\]/, /http/],
	])('refuses %s = %j with no request sent', async (field, value, message, allowed) => {
		const result = await runNode(node, { credentials, parameters: generate({ additionalFields: { [field]: value } }) });
		expect(result.error?.message).toMatch(message);
		expect(result.error?.description).toMatch(allowed);
		expect(sandbox.requests).toHaveLength(0);
	});
});

describe('voice presets', () => {
	it('List Voices gives one item per preset of GET /v1/voices', async () => {
		const result = await runNode(node, { credentials, items: [{}], parameters: { operation: 'listVoices' } });
		expect(result.error).toBeUndefined();
		expect(result.items.map((item) => item.json.name)).toEqual(['alloy', 'aria', 'marcus', 'sofia', 'kenji', 'lena']);
		expect(result.items[1].json).toMatchObject({ name: 'aria', language: 'en-GB', gender: 'female' });
		expect(result.items[1].json.preview_url).toMatch(/^http/);
		expect(result.items.every((item) => JSON.stringify(item.pairedItem) === '{"item":0}')).toBe(true);
		expect(sandbox.requestsTo('GET', '/v1/voices')).toHaveLength(1);
	});

	it('fill the Voice dropdown (loadOptions getVoices)', async () => {
		const context = loadOptionsContext(node, { credentials, parameters: generate() }, 'parameters.additionalFields.voice');
		const options = await node.methods.loadOptions.getVoices.call(context);
		expect(options.map((option) => option.value)).toEqual(['alloy', 'aria', 'marcus', 'sofia', 'kenji', 'lena']);
		expect(options[1]).toEqual({ name: 'aria (en-GB, female)', value: 'aria' });
		expect(sandbox.requestsTo('GET', '/v1/voices')[0].headers.authorization).toBe(`Bearer ${sandbox.apiKey}`);
	});
});

describe('the voice node in the editor', () => {
	const fields = () =>
		node.description.properties.find((p) => p.name === 'additionalFields')!.options as Array<{
			name: string;
			hint?: string;
			options?: Array<{ value: string }>;
			typeOptions?: Record<string, unknown>;
		}>;
	it('has the fields of §4.4: emotions as specified, speed 0.5–2.0, the cloning advice, voices loaded', () => {
		const byName = (name: string) => fields().find((f) => f.name === name)!;
		expect(fields().map((f) => f.name).sort()).toEqual(['emotion', 'modelParameters', 'refAudioUrl', 'speed', 'voice']);
		expect(byName('emotion').options!.map((o) => o.value)).toEqual(['neutral', 'happy', 'sad', 'excited']);
		expect(byName('speed').typeOptions).toMatchObject({ minValue: 0.5, maxValue: 2 });
		expect(byName('refAudioUrl').hint).toMatch(/10 to 30 seconds.*background noise/);
		expect(byName('voice').typeOptions).toMatchObject({ loadOptionsMethod: 'getVoices' });
	});

	it('says that the voice cost fields are microdollars, not credits', () => {
		const notice = node.description.properties.find((p) => p.type === 'notice')!;
		expect(notice.displayName).toMatch(/credits_used.*estimated_credits.*microdollars, not credits/);
	});
});
