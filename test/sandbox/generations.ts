/**
 * The generation endpoints (§4.1–§4.5): validation, estimates (`confirm: false`), charges, and the
 * result bodies of §2.1–§2.3. Image and short voice answer at once; the rest become jobs (§3).
 */
import { type Answer, invalid, isHttpUrl, isObject, newId, ok, quote, seedFromId } from './common';
import { type Billing, money, usd } from './billing';
import {
	EMOTIONS,
	IMAGE_ASPECT_RATIOS,
	IMAGE_SIZES,
	MODELS,
	type Modality,
	type ModelDef,
	VIDEO_ASPECT_RATIOS,
	VIDEO_RESOLUTIONS,
	VOICES,
	findModel,
	videoPricePerSecond,
} from './catalog';
import type { Files } from './files';
import type { Jobs } from './jobs';
import type { KeyRecord } from './keys';
import type { MediaSpec } from './media';

/** Voice prompts longer than this run as async jobs ("long-form text", §4.4). */
export const VOICE_SYNC_MAX_CHARS = 1_000;
/** Speech rate used for voice durations: 15 characters per second at speed 1.0. */
const CHARS_PER_SECOND = 15;
/** Served MP4s keep the aspect ratio but use this shorter side, so files stay small. */
const VIDEO_SERVED_SHORT_SIDE = 180;

export interface GenerationEnv {
	billing: Billing;
	jobs: Jobs;
	files: Files;
	jobDurationMs(modality: Modality): number;
	outputSizeBytes(modality: Modality): number | undefined;
	/** Why the next async job must fail, if it must (`[sandbox:fail]`, failNextJobs). */
	nextFailure(prompt: string): string | undefined;
}

export interface Caller {
	key: KeyRecord;
	idempotencyKey?: string;
}

interface Output {
	spec: MediaSpec;
	cost: unknown;
	metadata?: Record<string, unknown>;
}

/** A valid request: what it costs and, given the new id, what it produces. */
interface Plan {
	model: ModelDef;
	prompt: string;
	priceMicro: number;
	async: boolean;
	webhookUrl?: string;
	output(id: string, sizeBytes: number | undefined): Output;
}

type Body = Record<string, unknown>;

// ---- field checks: each 400 names the field, the value and what is allowed ----

function oneOf(body: Body, field: string, allowed: string[]): string | undefined {
	const value = body[field];
	if (value === undefined) return undefined;
	if (typeof value !== 'string' || !allowed.includes(value)) {
		throw invalid(`${field} must be one of ${allowed.join(', ')}; got ${quote(value)}.`);
	}
	return value;
}

function numberIn(
	body: Body,
	field: string,
	min: number,
	max: number,
	minExclusive = false,
): number | undefined {
	const value = body[field];
	if (value === undefined) return undefined;
	const tooLow = (v: number) => (minExclusive ? v <= min : v < min);
	if (typeof value !== 'number' || !Number.isFinite(value) || tooLow(value) || value > max) {
		const range = minExclusive
			? `greater than ${min} and at most ${max}`
			: `between ${min} and ${max}`;
		throw invalid(`${field} must be a number ${range}; got ${quote(value)}.`);
	}
	return value;
}

function optionalString(body: Body, field: string): string | undefined {
	const value = body[field];
	if (value !== undefined && typeof value !== 'string')
		throw invalid(`${field} must be a string; got ${quote(value)}.`);
	return value as string | undefined;
}

/** A source image or reference audio: an http(s) URL, or a data: URL for inline files. */
function urlField(
	body: Body,
	field: string,
	model: ModelDef,
	accepted: boolean | undefined,
	who: string,
): void {
	const value = body[field];
	if (value === undefined) return;
	if (!accepted) throw invalid(`${field} is not accepted by model ${model.id}; ${who}.`);
	if (!isHttpUrl(value) && !(typeof value === 'string' && value.startsWith('data:'))) {
		throw invalid(`${field} must be an http(s) URL; got ${quote(value)}.`);
	}
}

const modelsOf = (modality: Modality) =>
	MODELS.filter((m) => m.modality === modality)
		.map((m) => m.id)
		.join(', ');

/** Checks shared by every endpoint: model, prompt, confirm, webhook_url. */
function base(modality: Modality, body: unknown): { body: Body; model: ModelDef; prompt: string } {
	if (!isObject(body)) throw invalid('The body must be a JSON object with model and prompt.');
	const { model: id, prompt } = body;
	if (id === undefined || id === '')
		throw invalid(`model is required; ${modality} models: ${modelsOf(modality)}.`);
	if (typeof prompt !== 'string' || prompt.trim() === '')
		throw invalid('prompt is required (a non-empty string).');
	const model = typeof id === 'string' ? findModel(id) : undefined;
	if (!model)
		throw invalid(`model ${quote(id)} is unknown; ${modality} models: ${modelsOf(modality)}.`);
	if (model.modality !== modality) {
		throw invalid(
			`model ${quote(id)} is a ${model.modality} model, not ${modality}; ${modality} models: ${modelsOf(modality)}.`,
		);
	}
	if (body.confirm !== undefined && typeof body.confirm !== 'boolean') {
		throw invalid(`confirm must be a boolean; got ${quote(body.confirm)}.`);
	}
	if (body.webhook_url !== undefined && !isHttpUrl(body.webhook_url)) {
		throw invalid(`webhook_url must be an http(s) URL; got ${quote(body.webhook_url)}.`);
	}
	return { body, model, prompt };
}

// ---- one planner per endpoint ----

function planImage(input: unknown): Plan {
	const { body, model, prompt } = base('image', input);
	optionalString(body, 'negative_prompt');
	const aspect = oneOf(body, 'aspect_ratio', IMAGE_ASPECT_RATIOS) ?? '1:1';
	let [width, height] = IMAGE_SIZES[aspect];
	if (body.image_size !== undefined) {
		const match =
			typeof body.image_size === 'string' ? /^(\d+)x(\d+)$/.exec(body.image_size) : null;
		const [w, h] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
		if (w < 1 || h < 1 || w > 4096 || h > 4096) {
			throw invalid(
				`image_size must be <width>x<height> with positive integers up to 4096, e.g. 1024x768; got ${quote(body.image_size)}.`,
			);
		}
		[width, height] = [w, h];
	}
	if (body.seed !== undefined && !Number.isSafeInteger(body.seed)) {
		throw invalid(`seed must be an integer; got ${quote(body.seed)}.`);
	}
	const seed = (body.seed as number | undefined) ?? Math.floor(Math.random() * 2 ** 31);
	urlField(body, 'image', model, model.acceptsImage, 'image editing needs flux-kontext');
	return {
		model,
		prompt,
		priceMicro: model.priceMicro,
		async: false,
		// The served picture has the answered size; a fixed seed gives the same bytes (§4.1 "reproducible").
		output: (_id, sizeBytes) => ({
			spec: { format: model.format, seed: seed >>> 0, width, height, sizeBytes },
			cost: usd(model.priceMicro),
			metadata: { width, height, seed },
		}),
	};
}

function planVideo(input: unknown): Plan {
	const { body, model, prompt } = base('video', input);
	const range = model.duration!;
	const duration = numberIn(body, 'duration', range.min, range.max) ?? range.default;
	const aspect = oneOf(body, 'aspect_ratio', VIDEO_ASPECT_RATIOS) ?? model.defaultAspectRatio!;
	const resolution = oneOf(body, 'resolution', VIDEO_RESOLUTIONS) ?? '720p';
	urlField(body, 'image', model, model.acceptsImage, 'image-to-video needs kling-2.1');
	const priceMicro = Math.round(videoPricePerSecond(model, resolution) * duration);
	const short = resolution === '1080p' ? 1080 : 720;
	const long = Math.round((short * 16) / 9);
	const [width, height] =
		aspect === '16:9' ? [long, short] : aspect === '9:16' ? [short, long] : [short, short];
	const scale = VIDEO_SERVED_SHORT_SIDE / short;
	return {
		model,
		prompt,
		priceMicro,
		async: true,
		webhookUrl: body.webhook_url as string | undefined,
		output: (id, sizeBytes) => ({
			spec: {
				format: 'mp4',
				seed: seedFromId(id),
				width: 2 * Math.round((width * scale) / 2),
				height: 2 * Math.round((height * scale) / 2),
				durationSeconds: duration,
				sizeBytes,
			},
			cost: usd(priceMicro),
			metadata: { duration, width, height, fps: 25 },
		}),
	};
}

/** A title from the prompt's first words, section markers such as [Verse] left out. */
function titleFrom(prompt: string): string {
	const words = prompt
		.replace(/\[[^\]]*\]/g, ' ')
		.split(/\s+/)
		.filter(Boolean)
		.slice(0, 5);
	return words.length ? words.map((w) => w[0].toUpperCase() + w.slice(1)).join(' ') : 'Untitled';
}

function planMusic(input: unknown): Plan {
	const { body, model, prompt } = base('music', input);
	const range = model.duration!;
	const duration = numberIn(body, 'duration', 0, range.max, true) ?? range.default;
	optionalString(body, 'genre');
	if (body.instrumental !== undefined && typeof body.instrumental !== 'boolean') {
		throw invalid(`instrumental must be a boolean; got ${quote(body.instrumental)}.`);
	}
	const priceMicro = Math.round(model.priceMicro * duration);
	return {
		model,
		prompt,
		priceMicro,
		async: true,
		webhookUrl: body.webhook_url as string | undefined,
		output: (id, sizeBytes) => ({
			spec: { format: 'mp3', seed: seedFromId(id), durationSeconds: duration, sizeBytes },
			cost: usd(priceMicro),
			metadata: { duration, title: titleFrom(prompt), sample_rate: 44_100 },
		}),
	};
}

function planVoice(input: unknown): Plan {
	const { body, model, prompt } = base('voice', input);
	const voice =
		oneOf(
			body,
			'voice',
			VOICES.map((v) => v.name),
		) ?? 'alloy';
	const speed = numberIn(body, 'speed', 0.5, 2) ?? 1;
	oneOf(body, 'emotion', EMOTIONS);
	urlField(body, 'ref_audio_url', model, model.cloning, 'only xtts-clone supports voice cloning');
	const characters = [...prompt].length;
	const priceMicro = Math.max(model.minimumMicro ?? 0, characters * model.priceMicro);
	const duration = Math.max(0.1, Math.round((characters / CHARS_PER_SECOND / speed) * 100) / 100);
	return {
		model,
		prompt,
		priceMicro,
		async: characters > VOICE_SYNC_MAX_CHARS,
		webhookUrl: body.webhook_url as string | undefined,
		output: (id, sizeBytes) => ({
			spec: { format: 'mp3', seed: seedFromId(id), durationSeconds: duration, sizeBytes },
			// §2.2: voice keeps its legacy field names; the values are microdollars.
			cost: { credits_used: priceMicro, estimated_credits: priceMicro, currency: 'microdollars' },
			metadata: { duration, sample_rate: 44_100, voice },
		}),
	};
}

/** §4.5 shows only model and prompt; other fields are accepted as they are (per-model parameters). */
function planThreeD(input: unknown): Plan {
	const { body, model, prompt } = base('threeD', input);
	return {
		model,
		prompt,
		priceMicro: model.priceMicro,
		async: true,
		webhookUrl: body.webhook_url as string | undefined,
		output: (id, sizeBytes) => ({
			spec: { format: 'glb', seed: seedFromId(id), sizeBytes },
			cost: usd(model.priceMicro),
		}),
	};
}

const PLANNERS: Record<Modality, (body: unknown) => Plan> = {
	image: planImage,
	video: planVideo,
	music: planMusic,
	voice: planVoice,
	threeD: planThreeD,
};

/** POST /v1/generations/{modality}. Throws ApiError for 400 and 402. */
export function generate(
	modality: Modality,
	body: unknown,
	env: GenerationEnv,
	caller: Caller,
): Answer {
	const plan = PLANNERS[modality](body);
	const { model, priceMicro } = plan;
	if ((body as Body).confirm === false) return ok({ estimated_cost: money(priceMicro) });

	env.billing.check(priceMicro, caller.key);
	const sizeBytes = env.outputSizeBytes(modality);
	const charge = (id: string) =>
		env.billing.charge({
			id,
			model: model.id,
			modality,
			micro: priceMicro,
			key: caller.key,
			idempotencyKey: caller.idempotencyKey,
		});

	if (!plan.async) {
		const id = newId('gen_');
		const out = plan.output(id, sizeBytes);
		const url = env.files.add(id, out.spec);
		charge(id);
		return ok({
			id,
			status: 'completed',
			url,
			model: model.id,
			modality,
			cost: out.cost,
			metadata: out.metadata,
		});
	}

	const id = newId('job_');
	const out = plan.output(id, sizeBytes); // fixed now: the file does not depend on later configure()
	env.jobs.submit({
		id,
		modality,
		model: model.id,
		estimatedMicro: priceMicro,
		durationMs: env.jobDurationMs(modality),
		webhookUrl: plan.webhookUrl,
		failReason: env.nextFailure(plan.prompt),
		complete: () => {
			// Jobs are charged on success only; the balance or caps may have moved since submission.
			env.billing.check(priceMicro, caller.key);
			charge(id);
			return { url: env.files.add(id, out.spec), cost: out.cost, metadata: out.metadata };
		},
	});
	return ok({ id, status: 'queued', estimated_cost: money(priceMicro) });
}
