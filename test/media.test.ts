import { spawnSync } from 'child_process';
import { createHash } from 'crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { inflateSync } from 'zlib';

import {
	MEDIA_TYPES,
	mediaBuffer,
	mediaSize,
	mediaStream,
	type MediaFormat,
	type MediaSpec,
} from './sandbox/media';

const FORMATS: MediaFormat[] = ['png', 'jpeg', 'mp4', 'mp3', 'glb'];

async function collect(spec: MediaSpec): Promise<{ bytes: Buffer; maxChunk: number }> {
	const parts: Buffer[] = [];
	let maxChunk = 0;
	for await (const chunk of mediaStream(spec)) {
		parts.push(chunk as Buffer);
		maxChunk = Math.max(maxChunk, (chunk as Buffer).length);
	}
	return { bytes: Buffer.concat(parts), maxChunk };
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

// ------------------------------------------------------------------------------------------
// Tiny structural parsers: they throw (via expect) on anything malformed and return the key fields.

const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
	let c = n;
	for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	return c;
});
function crc32(buf: Buffer): number {
	let c = -1;
	for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
	return ~c >>> 0;
}

function parsePng(buf: Buffer): { width: number; height: number; chunks: string[] } {
	expect(buf.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
	const chunks: string[] = [];
	const idat: Buffer[] = [];
	let pos = 8;
	while (pos < buf.length) {
		const len = buf.readUInt32BE(pos);
		const type = buf.toString('latin1', pos + 4, pos + 8);
		expect(buf.readUInt32BE(pos + 8 + len)).toBe(crc32(buf.subarray(pos + 4, pos + 8 + len)));
		if (type === 'IDAT') idat.push(buf.subarray(pos + 8, pos + 8 + len));
		chunks.push(type);
		pos += 12 + len;
	}
	expect(pos).toBe(buf.length);
	expect(chunks[0]).toBe('IHDR');
	expect(chunks[chunks.length - 1]).toBe('IEND');
	const width = buf.readUInt32BE(16);
	const height = buf.readUInt32BE(20);
	expect([...buf.subarray(24, 29)]).toEqual([8, 2, 0, 0, 0]); // 8-bit RGB, no interlace
	expect(inflateSync(Buffer.concat(idat)).length).toBe((width * 3 + 1) * height);
	return { width, height, chunks };
}

function parseJpeg(buf: Buffer): { width: number; height: number; markers: number[] } {
	expect(buf.readUInt16BE(0)).toBe(0xffd8);
	const markers: number[] = [];
	let sof: { width: number; height: number } | undefined;
	let pos = 2;
	for (;;) {
		expect(buf[pos]).toBe(0xff);
		while (buf[pos] === 0xff) pos++; // fill bytes
		const marker = buf[pos++];
		markers.push(marker);
		if (marker === 0xd9) break;
		const len = buf.readUInt16BE(pos);
		if (marker === 0xc0) {
			expect(buf[pos + 2]).toBe(8);
			sof = { height: buf.readUInt16BE(pos + 3), width: buf.readUInt16BE(pos + 5) };
		}
		pos += len;
		// after SOS: entropy-coded data up to the next marker (ff 00 is a stuffed byte)
		if (marker === 0xda) while (!(buf[pos] === 0xff && buf[pos + 1] !== 0x00)) pos++;
	}
	expect(pos).toBe(buf.length);
	expect(sof).toBeDefined();
	for (const m of [0xdb, 0xc0, 0xc4, 0xda]) expect(markers).toContain(m);
	return { ...(sof as { width: number; height: number }), markers };
}

function parseMp3(buf: Buffer): {
	tags: number;
	frames: number;
	infoFrames: number;
	duration: number;
} {
	let pos = 0;
	let tags = 0;
	while (buf.toString('latin1', pos, pos + 3) === 'ID3') {
		expect(buf[pos + 3]).toBe(4);
		const size = (buf[pos + 6] << 21) | (buf[pos + 7] << 14) | (buf[pos + 8] << 7) | buf[pos + 9];
		pos += 10 + size;
		tags++;
	}
	const first = pos;
	let frames = 0;
	while (pos < buf.length) {
		// sync, MPEG-1, Layer III, no CRC, 128 kbps, 44100 Hz; bit 9 pads (no expect: it is slow)
		const h = buf.readUInt32BE(pos);
		if ((h & 0xfffffc00) >>> 0 !== 0xfffb9000)
			throw new Error(`bad MP3 frame header ${h.toString(16)} at ${pos}`);
		pos += 417 + ((h >>> 9) & 1);
		frames++;
	}
	expect(pos).toBe(buf.length);
	expect(buf.toString('latin1', first + 21, first + 25)).toBe('Info');
	const infoFrames = buf.readUInt32BE(first + 29);
	expect(infoFrames).toBe(frames - 1);
	return { tags, frames, infoFrames, duration: (infoFrames * 1152) / 44100 };
}

interface Box {
	type: string;
	start: number;
	size: number;
}
function boxes(buf: Buffer, start: number, end: number): Box[] {
	const out: Box[] = [];
	for (let pos = start; pos < end; ) {
		const size = buf.readUInt32BE(pos);
		expect(size).toBeGreaterThanOrEqual(8);
		out.push({ type: buf.toString('latin1', pos + 4, pos + 8), start: pos, size });
		pos += size;
		expect(pos).toBeLessThanOrEqual(end);
	}
	return out;
}
function box(buf: Buffer, path: string): Box {
	let found: Box = { type: '', start: -8, size: buf.length + 8 };
	for (const type of path.split('/')) {
		const child = boxes(buf, found.start + 8, found.start + found.size).find(
			(b) => b.type === type,
		);
		expect(child).toBeDefined();
		found = child as Box;
	}
	return found;
}

function parseMp4(buf: Buffer) {
	const top = boxes(buf, 0, buf.length).map((b) => b.type);
	const at = (path: string, offset: number): number =>
		buf.readUInt32BE(box(buf, path).start + offset);
	const stbl = 'moov/trak/mdia/minf/stbl';
	const avc1 = box(buf, `${stbl}/stsd`).start + 16;
	expect(buf.toString('latin1', avc1 + 4, avc1 + 8)).toBe('avc1');
	const chunkOffset = at(`${stbl}/stco`, 16);
	const mdat = box(buf, 'mdat');
	expect(chunkOffset).toBe(mdat.start + 8);
	expect(buf[chunkOffset + 4]).toBe(0x65); // the first sample is an IDR NAL unit
	return {
		top,
		movieTimescale: at('moov/mvhd', 20),
		movieDuration: at('moov/mvhd', 24),
		mediaTimescale: at('moov/trak/mdia/mdhd', 20),
		mediaDuration: at('moov/trak/mdia/mdhd', 24),
		width: at('moov/trak/tkhd', 84) / 0x10000,
		height: at('moov/trak/tkhd', 88) / 0x10000,
		sampleWidth: buf.readUInt16BE(avc1 + 32),
		sampleHeight: buf.readUInt16BE(avc1 + 34),
		samples: at(`${stbl}/stsz`, 16),
		handler: buf.toString(
			'latin1',
			box(buf, 'moov/trak/mdia/hdlr').start + 16,
			box(buf, 'moov/trak/mdia/hdlr').start + 20,
		),
	};
}

function parseGlb(buf: Buffer) {
	expect(buf.toString('latin1', 0, 4)).toBe('glTF');
	expect(buf.readUInt32LE(4)).toBe(2);
	expect(buf.readUInt32LE(8)).toBe(buf.length);
	const jsonLength = buf.readUInt32LE(12);
	expect(buf.readUInt32LE(16)).toBe(0x4e4f534a);
	const binAt = 20 + jsonLength;
	const binLength = buf.readUInt32LE(binAt);
	expect(buf.readUInt32LE(binAt + 4)).toBe(0x004e4942);
	expect(binAt + 8 + binLength).toBe(buf.length);
	expect(jsonLength % 4).toBe(0);
	expect(binLength % 4).toBe(0);
	const json = JSON.parse(buf.toString('utf8', 20, binAt));
	expect(json.asset.version).toBe('2.0');
	expect(json.buffers[0].byteLength).toBe(binLength);
	const acc = json.accessors[json.meshes[0].primitives[0].attributes.POSITION];
	const pos = Array.from({ length: 9 }, (_, i) => buf.readFloatLE(binAt + 8 + i * 4));
	for (let axis = 0; axis < 3; axis++) {
		const values = [pos[axis], pos[axis + 3], pos[axis + 6]];
		expect(acc.min[axis]).toBe(Math.min(...values));
		expect(acc.max[axis]).toBe(Math.max(...values));
	}
	return { json, binLength };
}

/** Runs the format's parser and keeps the fields that padding must not change. */
function summary(format: MediaFormat, buf: Buffer): unknown {
	const pick = <T extends object, K extends keyof T>(o: T, ...keys: K[]): Pick<T, K> =>
		Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;
	switch (format) {
		case 'png':
			return pick(parsePng(buf), 'width', 'height');
		case 'jpeg':
			return pick(parseJpeg(buf), 'width', 'height');
		case 'mp3':
			return pick(parseMp3(buf), 'frames', 'infoFrames');
		case 'mp4':
			return pick(parseMp4(buf), 'width', 'height', 'samples', 'mediaDuration');
		case 'glb':
			return parseGlb(buf).json.accessors;
	}
}

// ------------------------------------------------------------------------------------------

describe('media', () => {
	it('declares MIME types and extensions', () => {
		expect(MEDIA_TYPES).toEqual({
			png: { mimeType: 'image/png', extension: '.png' },
			jpeg: { mimeType: 'image/jpeg', extension: '.jpg' },
			mp4: { mimeType: 'video/mp4', extension: '.mp4' },
			mp3: { mimeType: 'audio/mpeg', extension: '.mp3' },
			glb: { mimeType: 'model/gltf-binary', extension: '.glb' },
		});
	});

	it.each(FORMATS)(
		'%s: buffer equals the streamed bytes and mediaSize, chunks <= 64 KiB',
		async (format) => {
			for (const spec of [
				{ format, seed: 1 },
				{ format, seed: 2, sizeBytes: 300_001 },
			]) {
				const buf = mediaBuffer(spec);
				const { bytes, maxChunk } = await collect(spec);
				expect(bytes.equals(buf)).toBe(true);
				expect(buf.length).toBe(mediaSize(spec));
				expect(maxChunk).toBeLessThanOrEqual(64 * 1024);
			}
		},
	);

	it('png: valid chunks and CRCs, IHDR size, pixel data size', () => {
		expect(parsePng(mediaBuffer({ format: 'png', seed: 1 }))).toMatchObject({
			width: 64,
			height: 64,
		});
		expect(parsePng(mediaBuffer({ format: 'png', seed: 1, width: 333, height: 7 }))).toMatchObject({
			width: 333,
			height: 7,
		});
	});

	it('png: 1024x1024 is generated quickly', () => {
		const t = Date.now();
		mediaBuffer({ format: 'png', seed: 42, width: 1024, height: 1024 });
		expect(Date.now() - t).toBeLessThan(500); // ~50 ms on a dev machine; generous for CI
	});

	it('jpeg: markers and SOF0 size', () => {
		expect(parseJpeg(mediaBuffer({ format: 'jpeg', seed: 1 }))).toMatchObject({
			width: 64,
			height: 64,
		});
		expect(
			parseJpeg(mediaBuffer({ format: 'jpeg', seed: 3, width: 333, height: 97 })),
		).toMatchObject({ width: 333, height: 97 });
	});

	it('mp3: frame headers, Info frame count and duration', () => {
		const def = parseMp3(mediaBuffer({ format: 'mp3', seed: 1 }));
		expect(def.tags).toBe(1);
		expect(Math.abs(def.duration - 5)).toBeLessThan(0.03);
		expect(
			Math.abs(
				parseMp3(mediaBuffer({ format: 'mp3', seed: 1, durationSeconds: 61.5 })).duration - 61.5,
			),
		).toBeLessThan(0.03);
	});

	it('mp4: boxes, durations and dimensions', () => {
		const def = parseMp4(mediaBuffer({ format: 'mp4', seed: 1 }));
		expect(def).toMatchObject({
			top: ['ftyp', 'moov', 'mdat'],
			handler: 'vide',
			width: 320,
			height: 180,
			sampleWidth: 320,
			sampleHeight: 180,
			samples: 125,
		});
		expect(def.movieDuration / def.movieTimescale).toBe(5);
		expect(def.mediaDuration / def.mediaTimescale).toBe(5);
		const other = parseMp4(
			mediaBuffer({ format: 'mp4', seed: 1, width: 1280, height: 720, durationSeconds: 2.5 }),
		);
		expect(other).toMatchObject({ width: 1280, height: 720 });
		// whole frames at 25 fps
		expect(Math.abs(other.mediaDuration / other.mediaTimescale - 2.5)).toBeLessThan(0.021);
		expect(parseMp4(mediaBuffer({ format: 'mp4', seed: 1, width: 15, height: 17 }))).toMatchObject({
			width: 16,
			height: 18,
		}); // even
	});

	it('glb: header, chunks, JSON and accessor bounds', () => {
		const { json, binLength } = parseGlb(mediaBuffer({ format: 'glb', seed: 1 }));
		expect(binLength).toBe(36);
		expect(json.meshes).toHaveLength(1);
	});

	it.each(FORMATS)('%s: sizeBytes pads to exactly that size and stays valid', (format) => {
		const natural = mediaSize({ format, seed: 4 });
		// Small gaps exercise the sub-unit remainders; the large ones several filler units.
		for (const gap of [
			1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 65537, 65541, 1048588, 1048589, 3_000_000,
		]) {
			const spec = { format, seed: 4, sizeBytes: natural + gap };
			// GLB rounds up to 4-byte alignment
			const expected = format === 'glb' ? Math.ceil((natural + gap) / 4) * 4 : natural + gap;
			expect(mediaSize(spec)).toBe(expected);
			const buf = mediaBuffer(spec);
			expect(buf.length).toBe(expected);
			expect(summary(format, buf)).toEqual(summary(format, mediaBuffer({ format, seed: 4 })));
		}
		// smaller than natural: ignored
		expect(mediaSize({ format, seed: 4, sizeBytes: natural - 1 })).toBe(natural);
		expect(mediaSize({ format, seed: 4, sizeBytes: 0 })).toBe(natural);
	});

	it('padding keeps the content: dimensions and durations are unchanged', () => {
		expect(parsePng(mediaBuffer({ format: 'png', seed: 4, sizeBytes: 5_000_000 }))).toMatchObject({
			width: 64,
			height: 64,
		});
		expect(parseJpeg(mediaBuffer({ format: 'jpeg', seed: 4, sizeBytes: 5_000_000 }))).toMatchObject(
			{ width: 64, height: 64 },
		);
		expect(parseMp4(mediaBuffer({ format: 'mp4', seed: 4, sizeBytes: 5_000_000 }))).toMatchObject({
			top: ['ftyp', 'moov', 'mdat', 'free'],
			samples: 125,
		});
		expect(parseMp3(mediaBuffer({ format: 'mp3', seed: 4, sizeBytes: 5_000_000 }))).toMatchObject({
			tags: 1,
			infoFrames: 191,
		});
		expect(
			parseGlb(mediaBuffer({ format: 'glb', seed: 4, sizeBytes: 5_000_000 })).binLength,
		).toBeGreaterThan(4_999_000);
	});

	it('computes big sizes exactly without generating them (mp3 past the ID3 limit too)', () => {
		expect(mediaSize({ format: 'mp3', seed: 1, sizeBytes: 600_000_003 })).toBe(600_000_003);
		expect(mediaSize({ format: 'png', seed: 1, sizeBytes: 536_870_913 })).toBe(536_870_913);
		expect(mediaSize({ format: 'glb', seed: 1, sizeBytes: 536_870_913 })).toBe(536_870_916);
	});

	it('streams a 300 MB mp4 without holding it in memory', async () => {
		const spec: MediaSpec = { format: 'mp4', seed: 7, sizeBytes: 300_000_000 };
		const before = process.memoryUsage();
		let peakRss = before.rss;
		let peakArrayBuffers = before.arrayBuffers;
		let total = 0;
		let count = 0;
		const hash = createHash('sha256');
		for await (const chunk of mediaStream(spec)) {
			hash.update(chunk as Buffer);
			total += (chunk as Buffer).length;
			if (++count % 256 === 0) {
				const now = process.memoryUsage();
				peakRss = Math.max(peakRss, now.rss);
				peakArrayBuffers = Math.max(peakArrayBuffers, now.arrayBuffers);
			}
		}
		expect(total).toBe(300_000_000);
		expect(hash.digest('hex')).toHaveLength(64);
		expect(peakRss - before.rss).toBeLessThan(100 * 1024 * 1024);
		expect(peakArrayBuffers - before.arrayBuffers).toBeLessThan(100 * 1024 * 1024);
	});

	it('respects backpressure: a paused stream buffers only about one chunk', async () => {
		const stream = mediaStream({ format: 'mp4', seed: 1, sizeBytes: 50_000_000 });
		stream.pause();
		await new Promise((resolve) => setTimeout(resolve, 50));
		expect(stream.readableLength).toBeLessThanOrEqual(2 * 64 * 1024);
		stream.destroy();
	});

	it.each(FORMATS)('%s: deterministic, and the seed changes the content', async (format) => {
		const a = sha256((await collect({ format, seed: 11 })).bytes);
		expect(sha256((await collect({ format, seed: 11 })).bytes)).toBe(a);
		expect(sha256(mediaBuffer({ format, seed: 12 }))).not.toBe(a);
	});

	it('rejects invalid specs', () => {
		expect(() => mediaSize({ format: 'gif' as MediaFormat, seed: 1 })).toThrow(/format/);
		expect(() => mediaSize({ format: 'png', seed: 1, width: 0 })).toThrow(/width/);
		expect(() => mediaSize({ format: 'mp3', seed: 1, durationSeconds: -1 })).toThrow(/duration/);
		expect(() => mediaSize({ format: 'mp4', seed: 1, sizeBytes: 1.5 })).toThrow(/sizeBytes/);
	});

	// Optional: only where ffprobe is installed (not in CI).
	const hasFfprobe = spawnSync('ffprobe', ['-version']).status === 0;
	if (!hasFfprobe) console.log('media.test: ffprobe not found, skipping the ffprobe checks');
	(hasFfprobe ? it : it.skip)('ffprobe accepts the files without warnings', () => {
		const dir = mkdtempSync(join(tmpdir(), 'media-test-'));
		try {
			const probe = (spec: MediaSpec): string => {
				const file = join(
					dir,
					`${spec.format}-${spec.sizeBytes ?? 0}${MEDIA_TYPES[spec.format].extension}`,
				);
				writeFileSync(file, mediaBuffer(spec));
				const r = spawnSync(
					'ffprobe',
					[
						'-v',
						'warning',
						'-show_entries',
						'stream=codec_name,width,height,sample_rate:format=duration',
						'-of',
						'compact=p=0:nk=1',
						file,
					],
					{ encoding: 'utf8' },
				);
				expect(r.stderr).toBe('');
				return r.stdout.trim();
			};
			for (const sizeBytes of [undefined, 2_000_003]) {
				expect(probe({ format: 'png', seed: 1, sizeBytes })).toMatch(/^png\|64\|64/);
				expect(probe({ format: 'jpeg', seed: 1, sizeBytes })).toMatch(/^mjpeg\|64\|64/);
				expect(probe({ format: 'mp4', seed: 1, sizeBytes })).toMatch(/^h264\|320\|180\n5\.0+$/);
				expect(probe({ format: 'mp3', seed: 1, sizeBytes })).toMatch(/^mp3\|44100\n4\.98/);
			}
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
