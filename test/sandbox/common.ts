/** What every area shares: the §7 error shape, the answer type and id helpers. */
import { randomBytes } from 'node:crypto';
import type { MediaSpec } from './media';

/** A file to stream instead of a JSON body (output files, voice previews). */
export interface FileBody {
	spec: MediaSpec;
	mimeType: string;
	size: number;
}

/** One HTTP answer, built by the areas and written by server.ts (which may still break it: faults). */
export interface Answer {
	status: number;
	body?: unknown;
	headers?: Record<string, string>;
	file?: FileBody;
}

/** A §7 error: `{error:{code, message, status, ...details}}`. */
export class ApiError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		message: string,
		readonly details: Record<string, unknown> = {},
	) {
		super(message);
	}

	answer(): Answer {
		return {
			status: this.status,
			body: {
				error: { code: this.code, message: this.message, status: this.status, ...this.details },
			},
		};
	}
}

export const invalid = (message: string) => new ApiError(400, 'invalid_request', message);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);
export const ok = (body: unknown): Answer => ({ status: 200, body });

/** 24 hex chars after the prefix: `gen_…`, `job_…`, `key_…`. */
export const newId = (prefix: string) => prefix + randomBytes(12).toString('hex');
export const nowIso = () => new Date().toISOString();
/** ms since epoch with sub-ms precision, for ordering tests. */
export const nowMs = () => performance.timeOrigin + performance.now();

export function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A stable 32-bit seed from an id, so a URL always serves the same bytes. */
export const seedFromId = (id: string) => parseInt(id.slice(-8), 16) || 1;

export function isHttpUrl(value: unknown): boolean {
	if (typeof value !== 'string') return false;
	try {
		const url = new URL(value);
		return url.protocol === 'http:' || url.protocol === 'https:';
	} catch {
		return false;
	}
}

/** `"x"` for messages; long values are cut so an error stays readable. */
export function quote(value: unknown): string {
	const text = JSON.stringify(value) ?? String(value);
	return text.length > 60 ? text.slice(0, 57) + '...' : text;
}
