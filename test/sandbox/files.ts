/**
 * Output files at their `url` (§2.1 "CDN URL"): GET /files/{id}.{ext}, no auth, streamed from media.ts
 * with backpressure so files of hundreds of MB never sit in memory.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { type Answer, notFound } from './common';
import { MEDIA_TYPES, type MediaFormat, type MediaSpec, mediaSize, mediaStream } from './media';

const extension = (format: MediaFormat) => MEDIA_TYPES[format].extension.replace(/^\./, '');

export class Files {
	/** The spec is fixed when the generation is created, so a URL always serves the same bytes. */
	private readonly specs = new Map<string, MediaSpec>();

	constructor(private readonly baseUrl: () => string) {}

	add(id: string, spec: MediaSpec): string {
		this.specs.set(id, spec);
		return this.url(id, spec.format);
	}

	url(id: string, format: MediaFormat): string {
		return `${this.baseUrl()}/files/${id}.${extension(format)}`;
	}

	answer(path: string): Answer {
		const [, id, ext] = /^\/files\/([\w-]+)\.(\w+)$/.exec(path) ?? [];
		const spec = id === undefined ? undefined : this.specs.get(id);
		if (!spec || extension(spec.format) !== ext) throw notFound(`No file at ${path}.`);
		return {
			status: 200,
			file: { spec, mimeType: MEDIA_TYPES[spec.format].mimeType, size: mediaSize(spec) },
		};
	}
}

/**
 * Streams a file answer. With `cutAt`, sends the headers and that many bytes, then drops the
 * connection: a reset in the middle of a download.
 */
export function sendFile(
	req: IncomingMessage,
	res: ServerResponse,
	answer: Answer,
	cutAt?: number,
): void {
	const file = answer.file!;
	res.writeHead(200, {
		'Content-Type': file.mimeType,
		'Content-Length': String(file.size),
		...answer.headers,
	});
	if (req.method === 'HEAD') {
		res.end();
		return;
	}
	const source = mediaStream(file.spec);
	if (cutAt === undefined) pipeline(source, res, () => undefined);
	else void sendPart(source, res, cutAt);
}

async function sendPart(source: Readable, res: ServerResponse, cutAt: number): Promise<void> {
	let sent = 0;
	try {
		for await (const chunk of source as AsyncIterable<Buffer>) {
			const part = chunk.subarray(0, cutAt - sent);
			sent += part.length;
			if (sent >= cutAt) {
				// Destroy only once the bytes are flushed, so the client really sees a partial body.
				res.write(part, () => res.destroy());
				break;
			}
			if (!res.write(part)) {
				await new Promise((resolve) => {
					res.once('drain', resolve);
					res.once('close', resolve);
				});
				if (res.destroyed) break;
			}
		}
	} catch {
		res.destroy();
	} finally {
		source.destroy();
	}
}
