/**
 * The model catalog (§1, §4.15 GET /v1/models) and voice presets (§2.6, §4.7).
 * Prices are the infrastructure cost plus the 20 % platform fee (§1, §8), integer microdollars.
 */
import type { MediaFormat } from './media';
import { money } from './billing';

export type Modality = 'image' | 'video' | 'voice' | 'music' | 'threeD';
export const MODALITIES: Modality[] = ['image', 'video', 'voice', 'music', 'threeD'];

export const IMAGE_ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4'];
export const VIDEO_ASPECT_RATIOS = ['16:9', '9:16', '1:1'];
export const VIDEO_RESOLUTIONS = ['720p', '1080p'];
export const EMOTIONS = ['neutral', 'happy', 'sad', 'excited'];
/** Pixel size per §4.1 aspect ratio when no image_size is given. */
export const IMAGE_SIZES: Record<string, [number, number]> = {
	'1:1': [1024, 1024],
	'16:9': [1344, 768],
	'9:16': [768, 1344],
	'4:3': [1152, 896],
	'3:4': [896, 1152],
};
/** 1080p costs 1.5 times the 720p price per second. */
export const RESOLUTION_FACTOR: Record<string, number> = { '720p': 1, '1080p': 1.5 };

export interface ModelDef {
	id: string;
	name: string;
	modality: Modality;
	description: string;
	unit: 'image' | 'second' | 'character' | 'model';
	infraMicro: number;
	/** Per unit, at 720p for video. */
	priceMicro: number;
	format: MediaFormat;
	capabilities: string[];
	/** Accepts `image` (image editing, image-to-video). */
	acceptsImage?: boolean;
	/** Accepts `ref_audio_url`. */
	cloning?: boolean;
	/** Voice: the least a request costs. */
	minimumMicro?: number;
	/** Video and music, seconds. */
	duration?: { default: number; min: number; max: number };
	defaultAspectRatio?: string;
}

/** Infrastructure cost × 1.2, kept exact for integers. */
export const withFee = (infraMicro: number) => Math.round((infraMicro * 6) / 5);

function model(def: Omit<ModelDef, 'priceMicro'>): ModelDef {
	return { ...def, priceMicro: withFee(def.infraMicro) };
}

export const MODELS: ModelDef[] = [
	model({
		id: 'flux-schnell',
		name: 'FLUX.1 Schnell',
		modality: 'image',
		description: 'Fast text-to-image, PNG.',
		unit: 'image',
		infraMicro: 2_500,
		format: 'png',
		capabilities: ['text-to-image'],
	}),
	model({
		id: 'flux-pro',
		name: 'FLUX.1 Pro',
		modality: 'image',
		description: 'High-quality text-to-image, PNG.',
		unit: 'image',
		infraMicro: 40_000,
		format: 'png',
		capabilities: ['text-to-image'],
	}),
	model({
		id: 'seedream-jpeg',
		name: 'Seedream (JPEG)',
		modality: 'image',
		description: 'Text-to-image with JPEG output.',
		unit: 'image',
		infraMicro: 25_000,
		format: 'jpeg',
		capabilities: ['text-to-image'],
	}),
	model({
		id: 'flux-kontext',
		name: 'FLUX.1 Kontext',
		modality: 'image',
		description: 'Text-to-image and image editing (send `image`), PNG.',
		unit: 'image',
		infraMicro: 30_000,
		format: 'png',
		capabilities: ['text-to-image', 'image-editing'],
		acceptsImage: true,
	}),
	model({
		id: 'kling-2.1',
		name: 'Kling 2.1',
		modality: 'video',
		description:
			'Text-to-video and image-to-video, 3–10 s. Price per second at 720p; 1080p costs 1.5×.',
		unit: 'second',
		infraMicro: 50_000,
		format: 'mp4',
		capabilities: ['text-to-video', 'image-to-video'],
		acceptsImage: true,
		duration: { default: 5, min: 3, max: 10 },
		defaultAspectRatio: '16:9',
	}),
	model({
		id: 'veo-3',
		name: 'Veo 3',
		modality: 'video',
		description: 'Text-to-video, 4–8 s. Price per second at 720p; 1080p costs 1.5×.',
		unit: 'second',
		infraMicro: 400_000,
		format: 'mp4',
		capabilities: ['text-to-video'],
		duration: { default: 8, min: 4, max: 8 },
		defaultAspectRatio: '16:9',
	}),
	model({
		id: 'suno-v4',
		name: 'Suno v4',
		modality: 'music',
		description: 'Songs and instrumentals up to 240 s.',
		unit: 'second',
		infraMicro: 500,
		format: 'mp3',
		capabilities: ['text-to-music', 'lyrics'],
		duration: { default: 120, min: 0, max: 240 },
	}),
	model({
		id: 'udio-long',
		name: 'Udio Long',
		modality: 'music',
		description: 'Long-form music up to 480 s.',
		unit: 'second',
		infraMicro: 800,
		format: 'mp3',
		capabilities: ['text-to-music', 'lyrics'],
		duration: { default: 180, min: 0, max: 480 },
	}),
	model({
		id: 'eleven-turbo',
		name: 'Eleven Turbo',
		modality: 'voice',
		description: 'Text-to-speech with the preset voices; at least $0.001000 per request.',
		unit: 'character',
		infraMicro: 25,
		format: 'mp3',
		capabilities: ['text-to-speech'],
		minimumMicro: 1_000,
	}),
	model({
		id: 'xtts-clone',
		name: 'XTTS Clone',
		modality: 'voice',
		description: 'Text-to-speech with presets or voice cloning from `ref_audio_url`.',
		unit: 'character',
		infraMicro: 50,
		format: 'mp3',
		capabilities: ['text-to-speech', 'voice-cloning'],
		cloning: true,
	}),
	model({
		id: 'trellis',
		name: 'TRELLIS',
		modality: 'threeD',
		description: 'Text-to-3D, GLB.',
		unit: 'model',
		infraMicro: 50_000,
		format: 'glb',
		capabilities: ['text-to-3d'],
	}),
	model({
		id: 'hunyuan3d',
		name: 'Hunyuan3D',
		modality: 'threeD',
		description: 'High-detail text-to-3D, GLB.',
		unit: 'model',
		infraMicro: 100_000,
		format: 'glb',
		capabilities: ['text-to-3d'],
	}),
];

export const findModel = (id: string) => MODELS.find((m) => m.id === id);

/** Video price per second at a resolution. */
export const videoPricePerSecond = (m: ModelDef, resolution: string) =>
	withFee(m.infraMicro * (RESOLUTION_FACTOR[resolution] ?? 1));

/** The price of a request with default parameters (a 300-character text for voice), for seeded history. */
export function typicalPriceMicro(m: ModelDef): number {
	if (m.modality === 'video')
		return Math.round(videoPricePerSecond(m, '720p') * m.duration!.default);
	if (m.modality === 'music') return Math.round(m.priceMicro * m.duration!.default);
	if (m.modality === 'voice') return Math.max(m.minimumMicro ?? 0, 300 * m.priceMicro);
	return m.priceMicro;
}

const str = { type: 'string' };
const confirm = { type: 'boolean', default: true, description: 'false returns an estimate only' };
const webhook = { type: 'string', format: 'uri' };

/** A small JSON-schema-like description of the request body, per model. */
function parameters(m: ModelDef): Record<string, unknown> {
	const properties: Record<string, unknown> = {
		model: { type: 'string', const: m.id },
		prompt: str,
	};
	if (m.modality === 'image') {
		Object.assign(properties, {
			negative_prompt: str,
			aspect_ratio: { type: 'string', enum: IMAGE_ASPECT_RATIOS, default: '1:1' },
			image_size: { type: 'string', pattern: '^[0-9]+x[0-9]+$', maximum: 4096 },
			seed: { type: 'integer' },
			...(m.acceptsImage ? { image: { type: 'string', format: 'uri' } } : {}),
		});
	} else if (m.modality === 'video') {
		const d = m.duration!;
		Object.assign(properties, {
			...(m.acceptsImage ? { image: { type: 'string', format: 'uri' } } : {}),
			duration: { type: 'number', minimum: d.min, maximum: d.max, default: d.default },
			aspect_ratio: { type: 'string', enum: VIDEO_ASPECT_RATIOS, default: m.defaultAspectRatio },
			resolution: { type: 'string', enum: VIDEO_RESOLUTIONS, default: '720p' },
			webhook_url: webhook,
		});
	} else if (m.modality === 'music') {
		const d = m.duration!;
		Object.assign(properties, {
			genre: str,
			duration: { type: 'number', exclusiveMinimum: 0, maximum: d.max, default: d.default },
			instrumental: { type: 'boolean' },
			webhook_url: webhook,
		});
	} else if (m.modality === 'voice') {
		Object.assign(properties, {
			voice: { type: 'string', enum: VOICES.map((v) => v.name), default: 'alloy' },
			speed: { type: 'number', minimum: 0.5, maximum: 2, default: 1 },
			emotion: { type: 'string', enum: EMOTIONS },
			...(m.cloning ? { ref_audio_url: { type: 'string', format: 'uri' } } : {}),
			webhook_url: webhook,
		});
	} else {
		properties.webhook_url = webhook;
	}
	properties.confirm = confirm;
	return { type: 'object', required: ['model', 'prompt'], properties };
}

/** GET /v1/models: the shape is not shown (§4.15); see README. */
export function modelsBody(modality?: string) {
	return {
		models: MODELS.filter((m) => !modality || m.modality === modality).map((m) => ({
			id: m.id,
			name: m.name,
			modality: m.modality,
			description: m.description,
			pricing: { unit: m.unit, ...money(m.priceMicro) },
			capabilities: m.capabilities,
			parameters: parameters(m),
		})),
	};
}

export interface VoicePreset {
	name: string;
	language: string;
	gender: string;
}

export const VOICES: VoicePreset[] = [
	{ name: 'alloy', language: 'en-US', gender: 'neutral' },
	{ name: 'aria', language: 'en-GB', gender: 'female' },
	{ name: 'marcus', language: 'en-US', gender: 'male' },
	{ name: 'sofia', language: 'es-ES', gender: 'female' },
	{ name: 'kenji', language: 'ja-JP', gender: 'male' },
	{ name: 'lena', language: 'de-DE', gender: 'female' },
];
