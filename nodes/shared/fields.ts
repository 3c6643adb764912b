import type { IDataObject, INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import type { ServiceClient } from './transport';

export type Modality = 'image' | 'video' | 'voice' | 'music' | 'threeD';

/** The result of reading one optional body field: the value to send, or what would have been allowed. */
export type Parsed = { ok: true; value: unknown } | { ok: false; allowed: string };

/**
 * One optional body field of §4.1–§4.5: its n8n parameter (camelCase, inside `additionalFields`),
 * its name in the request body, and the check it must pass before any request is sent.
 */
export interface BodyField {
	property: INodeProperties;
	body: string;
	parse?: (value: unknown) => Parsed;
}

/** What makes one modality node different from the others; everything else is shared. */
export interface ModalityDefinition {
	modality: Modality;
	/** Lower-case noun for labels: "image", "video", "speech", "music", "3D model". */
	noun: string;
	endpoint: string;
	/** Whether the service may answer with a job to wait for (shows Wait for Completion and Get Job). */
	jobs: boolean;
	prompt: Pick<INodeProperties, 'displayName' | 'description' | 'placeholder'>;
	/** A model key of this modality, shown as the example of the Model field's "By ID" mode. */
	modelExample?: string;
	fields: BodyField[];
	/** Used when the download answers without a usable Content-Type and the URL has no known extension. */
	defaultMimeType: string;
	/** Extra operations of this modality (e.g. Voice's List Voices), after the shared ones. */
	extraOperations?: ExtraOperation[];
	/** A notice shown above the fields, for what a user of this modality must not misread. */
	notice?: string;
}

/** An operation only one modality has: its option in the Operation list and what it returns per item. */
export interface ExtraOperation {
	option: INodePropertyOptions;
	execute: (client: ServiceClient, itemIndex: number) => Promise<IDataObject[]>;
}

// ---------- checks shared by the modality fields ----------

export const oneOf =
	(values: readonly string[]) =>
	(value: unknown): Parsed =>
		typeof value === 'string' && values.includes(value)
			? { ok: true, value }
			: { ok: false, allowed: `one of ${values.join(', ')}` };

export const numberBetween =
	(min: number, max: number) =>
	(value: unknown): Parsed => {
		const number = toNumber(value);
		return number !== undefined && number >= min && number <= max
			? { ok: true, value: number }
			: { ok: false, allowed: `a number from ${min} to ${max}` };
	};

const positiveNumber = (value: unknown): Parsed => {
	const number = toNumber(value);
	return number !== undefined && number > 0
		? { ok: true, value: number }
		: { ok: false, allowed: 'a positive number of seconds' };
};

export const integer = (value: unknown): Parsed => {
	const number = toNumber(value);
	return number !== undefined && Number.isSafeInteger(number)
		? { ok: true, value: number }
		: { ok: false, allowed: 'a whole number' };
};

export const boolean = (value: unknown): Parsed => {
	if (typeof value === 'boolean') return { ok: true, value };
	if (value === 'true' || value === 'false') return { ok: true, value: value === 'true' };
	return { ok: false, allowed: 'true or false' };
};

export const httpUrl = (value: unknown): Parsed => {
	if (typeof value === 'string') {
		try {
			const url = new URL(value.trim());
			if (url.protocol === 'http:' || url.protocol === 'https:') return { ok: true, value: url.toString() };
		} catch {
			// falls through to the error
		}
	}
	return { ok: false, allowed: 'an http:// or https:// URL' };
};

export const text = (value: unknown): Parsed =>
	typeof value === 'string' || typeof value === 'number'
		? { ok: true, value: String(value) }
		: { ok: false, allowed: 'text' };

function toNumber(value: unknown): number | undefined {
	if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
	if (typeof value === 'string' && value.trim() !== '') {
		const number = Number(value);
		return Number.isFinite(number) ? number : undefined;
	}
	return undefined;
}

/**
 * A dropdown of the spec's values whose check accepts exactly those values. `label` gives the
 * name the editor shows for a value (the value itself by default).
 */
export function enumField(
	name: string,
	displayName: string,
	body: string,
	values: readonly string[],
	description: string,
	defaultValue = values[0],
	label: (value: string) => string = (value) => value,
): BodyField {
	return {
		body,
		parse: oneOf(values),
		property: {
			displayName,
			name,
			type: 'options',
			options: values.map((value) => ({ name: label(value), value })),
			default: defaultValue,
			description,
		},
	};
}

// ---------- fields every modality has ----------

export const modelParametersField: INodeProperties = {
	displayName: 'Model Parameters',
	name: 'modelParameters',
	type: 'json',
	default: '{}',
	description:
		'Extra fields for this model as a JSON object, merged into the request body (e.g. per-model parameters listed by the service\'s model catalog). The fields above take precedence.',
};

/** Reads `additionalFields` of one item into request body fields, or says which field is wrong. */
export function readBodyFields(
	definition: ModalityDefinition,
	additionalFields: IDataObject,
): { ok: true; body: IDataObject } | { ok: false; field: INodeProperties; value: unknown; allowed: string } {
	const body: IDataObject = {};
	const raw = additionalFields.modelParameters;
	if (raw !== undefined && raw !== '' && raw !== '{}') {
		let parameters: unknown = raw;
		if (typeof raw === 'string') {
			try {
				parameters = JSON.parse(raw);
			} catch {
				parameters = undefined;
			}
		}
		if (!parameters || typeof parameters !== 'object' || Array.isArray(parameters)) {
			return { ok: false, field: modelParametersField, value: raw, allowed: 'a JSON object such as {"steps": 30}' };
		}
		Object.assign(body, parameters);
		// `confirm` decides between charging and estimating: only the operation may set it.
		delete body.confirm;
	}
	for (const field of definition.fields) {
		const value = additionalFields[field.property.name];
		if (value === undefined || value === null || value === '') continue;
		const parsed = field.parse ? field.parse(value) : { ok: true as const, value };
		if (!parsed.ok) return { ok: false, field: field.property, value, allowed: parsed.allowed };
		body[field.body] = parsed.value as IDataObject[string];
	}
	return { ok: true, body };
}

// ---------- fields two modalities share ----------

/** §4.2 and §4.3 `webhook_url`: where the service POSTs the finished job (§6). */
export const webhookUrlField: BodyField = {
	body: 'webhook_url',
	parse: httpUrl,
	property: {
		displayName: 'Webhook URL',
		name: 'webhookUrl',
		type: 'string',
		default: '',
		placeholder: 'e.g. https://n8n.example.com/webhook/…/webhook',
		description:
			'The service POSTs the finished job here. Paste the Production URL of a Generation Service Trigger node to start another workflow when the job is done.',
	},
};

/**
 * `duration` in seconds (§4.2 video, §4.3 music); the allowed range depends on the model. The
 * default is what the field holds when it is added: a typical length for the modality.
 */
export function durationField(description: string, defaultSeconds: number): BodyField {
	return {
		body: 'duration',
		parse: positiveNumber,
		property: {
			displayName: 'Duration (Seconds)',
			name: 'duration',
			type: 'number',
			typeOptions: { minValue: 0 },
			default: defaultSeconds,
			description,
		},
	};
}

/** The modalities as a user picks them in a filter (Account transactions, Trigger). */
export const MODALITY_OPTIONS: INodePropertyOptions[] = [
	{ name: '3D', value: 'threeD' },
	{ name: 'Image', value: 'image' },
	{ name: 'Music', value: 'music' },
	{ name: 'Video', value: 'video' },
	{ name: 'Voice', value: 'voice' },
];
