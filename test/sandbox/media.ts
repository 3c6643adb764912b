/**
 * Deterministic, valid media files built from scratch (Node built-ins only) for the sandbox server.
 *
 * Every file is a list of parts (buffers, zero runs, repeated groups): `mediaSize()` is a sum and
 * `mediaStream()` produces files of hundreds of MB without holding them in memory. The costly part
 * (PNG pixels, JPEG scan, H.264 frames) is built once per spec and cached; padding only adds parts.
 *
 * Deviations: GLB sizes round up to a multiple of 4 (the format needs 4-byte chunks); MP4 widths
 * and heights round up to even numbers (4:2:0 H.264 cannot crop odd sizes); MP3s have at least
 * 8 frames (0.21 s). ffmpeg refuses JPEGs over 256 MiB (its packet limit); libjpeg reads them.
 */
import { createHash } from 'crypto';
import { Readable } from 'stream';
import { deflateSync } from 'zlib';

export type MediaFormat = 'png' | 'jpeg' | 'mp4' | 'mp3' | 'glb';

export const MEDIA_TYPES: Record<MediaFormat, { mimeType: string; extension: string }> = {
	png: { mimeType: 'image/png', extension: '.png' },
	jpeg: { mimeType: 'image/jpeg', extension: '.jpg' },
	mp4: { mimeType: 'video/mp4', extension: '.mp4' },
	mp3: { mimeType: 'audio/mpeg', extension: '.mp3' },
	glb: { mimeType: 'model/gltf-binary', extension: '.glb' },
};

export interface MediaSpec {
	format: MediaFormat;
	/** Changes the content (colours, tone, geometry); the same spec always gives the same bytes. */
	seed: number;
	/** png/jpeg/mp4 pixel size (default 64x64 images, 320x180 video). */
	width?: number;
	height?: number;
	/** mp4/mp3 duration (default 5). */
	durationSeconds?: number;
	/** Target total size: a larger one pads with format-appropriate filler, a smaller is ignored. */
	sizeBytes?: number;
}

/** Exact byte length of the file described by `spec`, without generating padding. */
export function mediaSize(spec: MediaSpec): number {
	return sizeOf(plan(spec));
}

/** Streams exactly `mediaSize(spec)` bytes lazily, in chunks of at most 64 KiB (not to mutate). */
export function mediaStream(spec: MediaSpec): Readable {
	return Readable.from(chunks(plan(spec)), { objectMode: false, highWaterMark: CHUNK });
}

/** The whole file in memory; meant for small files (use mediaStream for big ones). */
export function mediaBuffer(spec: MediaSpec): Buffer {
	const parts = plan(spec);
	const size = sizeOf(parts);
	if (size > MAX_BUFFER)
		throw new RangeError(`mediaBuffer: ${size} bytes is too large, use mediaStream()`);
	return Buffer.concat([...chunks(parts)], size);
}

// ------------------------------------------------------------------------------------------
// Parts: a file is a list of these, so huge padding never exists in memory.

type Part = Buffer | { zeros: number } | { repeat: Part[]; count: number };

const CHUNK = 64 * 1024;
const MAX_BUFFER = 256 * 1024 * 1024;
const ZERO_CHUNK = Buffer.alloc(CHUNK); // shared read-only chunk for long zero runs

function sizeOf(parts: readonly Part[]): number {
	let n = 0;
	for (const p of parts)
		n += Buffer.isBuffer(p) ? p.length : 'zeros' in p ? p.zeros : p.count * sizeOf(p.repeat);
	return n;
}

function* pieces(parts: readonly Part[]): Generator<Buffer | number> {
	for (const p of parts) {
		if (Buffer.isBuffer(p)) yield p;
		else if ('zeros' in p) yield p.zeros;
		else for (let i = 0; i < p.count; i++) yield* pieces(p.repeat);
	}
}

/** Coalesces parts into 64 KiB chunks (the last shorter); whole zero chunks are the shared one. */
function* chunks(parts: readonly Part[]): Generator<Buffer> {
	let out = Buffer.allocUnsafe(CHUNK);
	let pos = 0;
	for (const piece of pieces(parts)) {
		const zeros = typeof piece === 'number';
		const len = zeros ? piece : piece.length;
		let off = 0;
		while (off < len) {
			if (zeros && pos === 0 && len - off >= CHUNK) {
				yield ZERO_CHUNK;
				off += CHUNK;
				continue;
			}
			const n = Math.min(len - off, CHUNK - pos);
			if (zeros) out.fill(0, pos, pos + n);
			else piece.copy(out, pos, off, off + n);
			pos += n;
			off += n;
			if (pos === CHUNK) {
				yield out;
				out = Buffer.allocUnsafe(CHUNK);
				pos = 0;
			}
		}
	}
	if (pos > 0) yield out.subarray(0, pos);
}

/**
 * Splits `gap` filler bytes into units of `min`..`max` bytes (`full` units of `max`, then `last` if
 * non-zero); a remainder below `min` is returned as `absorb`, for a field that grows byte by byte.
 */
function splitGap(
	gap: number,
	min: number,
	max: number,
): { full: number; last: number; absorb: number } {
	if (gap < min) return { full: 0, last: 0, absorb: gap };
	const n = Math.ceil(gap / max);
	const last = gap - (n - 1) * max;
	return last < min ? { full: n - 1, last: 0, absorb: last } : { full: n - 1, last, absorb: 0 };
}

// ------------------------------------------------------------------------------------------
// Specs, models and the cache

interface Norm {
	format: MediaFormat;
	seed: number;
	width: number;
	height: number;
	duration: number;
}

/** The natural file of a spec, and how to build it with `gap` extra bytes. */
interface Model {
	natural: number;
	build(gap: number): Part[];
}

const BUILDERS: Record<MediaFormat, (n: Norm) => Omit<Model, 'natural'>> = {
	png: pngModel,
	jpeg: jpegModel,
	mp4: mp4Model,
	mp3: mp3Model,
	glb: glbModel,
};

const cache = new Map<string, Model>();

function plan(spec: MediaSpec): Part[] {
	const n = normalize(spec);
	const key = JSON.stringify(n);
	let model = cache.get(key);
	if (!model) {
		const built = BUILDERS[n.format](n);
		model = { natural: sizeOf(built.build(0)), build: built.build };
		if (cache.size >= 16) cache.delete(cache.keys().next().value as string);
		cache.set(key, model);
	}
	const target = spec.sizeBytes ?? 0;
	return model.build(target > model.natural ? target - model.natural : 0);
}

function normalize(spec: MediaSpec): Norm {
	const { format, seed } = spec;
	if (!Object.hasOwn(BUILDERS, format))
		throw new TypeError(`Unknown media format: ${String(format)}`);
	if (!Number.isFinite(seed)) throw new TypeError('seed must be a finite number');
	const int = (name: string, v: number | undefined, def: number, max: number): number => {
		const x = v ?? def;
		if (!Number.isInteger(x) || x < 1 || x > max)
			throw new RangeError(`${name} must be an integer in 1..${max}`);
		return x;
	};
	if (
		spec.sizeBytes !== undefined &&
		!(Number.isInteger(spec.sizeBytes) && spec.sizeBytes >= 0 && spec.sizeBytes <= 0xffffffff)
	) {
		throw new RangeError('sizeBytes must be an integer in 0..4294967295');
	}
	const video = format === 'mp4';
	const visual = video || format === 'png' || format === 'jpeg';
	const timed = video || format === 'mp3';
	const duration = timed ? (spec.durationSeconds ?? 5) : 0;
	if (timed && !(duration > 0 && duration <= 4 * 3600))
		throw new RangeError('durationSeconds must be in (0, 14400]');
	// Irrelevant fields are zeroed so that they do not split the cache or change the bytes.
	return {
		format,
		seed,
		width: visual ? int('width', spec.width, video ? 320 : 64, 16384) : 0,
		height: visual ? int('height', spec.height, video ? 180 : 64, 16384) : 0,
		duration,
	};
}

/** Seed-dependent pseudo-random bytes (32 of them). */
function seedBytes(n: Norm): Buffer {
	return createHash('sha256').update(`${n.format}:${n.seed}`).digest();
}

/** Text for comment/metadata fields; naming the seed keeps different seeds' bytes different. */
const label = (n: Norm): string => `Generation Service sandbox, seed ${n.seed}`;

// ------------------------------------------------------------------------------------------
// Small binary helpers

/** Big-endian fields given as [byteCount, value] pairs. */
function be(...fields: Array<[number, number]>): Buffer {
	const out = Buffer.alloc(fields.reduce((n, [len]) => n + len, 0));
	let pos = 0;
	for (const [len, value] of fields) {
		out.writeUIntBE(value, pos + Math.max(0, len - 6), Math.min(len, 6)); // wider: high bytes 0
		pos += len;
	}
	return out;
}

/** MSB-first bit writer (H.264 Exp-Golomb, MP3 side info, JPEG entropy data). */
class Bits {
	private readonly bytes: number[] = [];
	private cur = 0;
	private n = 0;

	u(count: number, value: number): this {
		for (let i = count - 1; i >= 0; i--) {
			this.cur = (this.cur << 1) | ((value >>> i) & 1);
			if (++this.n === 8) {
				this.bytes.push(this.cur);
				this.cur = 0;
				this.n = 0;
			}
		}
		return this;
	}

	ue(v: number): this {
		const len = 32 - Math.clz32(v + 1);
		return this.u(len - 1, 0).u(len, v + 1);
	}

	se(v: number): this {
		return this.ue(v <= 0 ? -2 * v : 2 * v - 1);
	}

	/** Writes [bitCount, value] fields; bitCount 'ue'/'se' writes an Exp-Golomb code. */
	put(...fields: Array<[number | 'ue' | 'se', number]>): this {
		for (const [kind, value] of fields) {
			if (kind === 'ue') this.ue(value);
			else if (kind === 'se') this.se(value);
			else this.u(kind, value);
		}
		return this;
	}

	align(fill: 0 | 1): this {
		while (this.n) this.u(1, fill);
		return this;
	}

	buffer(): Buffer {
		return Buffer.from(this.align(0).bytes);
	}
}

const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
	let c = n;
	for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	return c;
});

function crc32(buf: Uint8Array, crc = 0): number {
	let c = ~crc;
	for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
	return ~c >>> 0;
}

/** Linear ramp between two byte values, t in [0, 1]. */
const lerp = (a: number, b: number, t: number): number => Math.round(a + (b - a) * t);

/** Position of pixel i of n in [0, 1]. */
const unit = (i: number, n: number): number => (n > 1 ? i / (n - 1) : 0);

/** Seeded RGB gradient of PNG and JPEG: red along x, green along y, blue along the diagonal. */
function gradient(s: Buffer) {
	return {
		r: (tx: number): number => lerp(s[0], s[1], tx),
		g: (ty: number): number => lerp(s[2], s[3], ty),
		b: (tx: number, ty: number): number => lerp(s[4], s[5], (tx + ty) / 2),
	};
}

// ------------------------------------------------------------------------------------------
// PNG: signature, IHDR, tEXt, IDAT, private 'fiLl' chunks (padding), IEND.

const PNG_FILL = 1024 * 1024; // data bytes per full 'fiLl' chunk: its CRC is computed once

function pngChunk(type: string, data: Buffer): Buffer {
	const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
	return Buffer.concat([be([4, data.length]), body, be([4, crc32(body)])]);
}

const fillCrcs = new Map<number, number>();

/** 'fiLl' (ancillary, private, safe-to-copy) chunk of `len` zero bytes, zeros not materialised. */
function pngFill(len: number): Part[] {
	let crc = fillCrcs.get(len);
	if (crc === undefined) {
		crc = crc32(Buffer.from('fiLl', 'latin1'));
		for (let done = 0; done < len; done += CHUNK)
			crc = crc32(ZERO_CHUNK.subarray(0, Math.min(CHUNK, len - done)), crc);
		if (len === PNG_FILL) fillCrcs.set(len, crc);
	}
	return [
		Buffer.concat([be([4, len]), Buffer.from('fiLl', 'latin1')]),
		{ zeros: len },
		be([4, crc]),
	];
}

function pngModel(n: Norm): Omit<Model, 'natural'> {
	const { width: w, height: h } = n;
	const grad = gradient(seedBytes(n));
	const tx = Array.from({ length: w }, (_, x) => unit(x, w));
	const red = tx.map(grad.r);
	const stride = w * 3 + 1;
	const raw = Buffer.alloc(stride * h); // filter byte 0 (None) per row
	for (let y = 0; y < h; y++) {
		const ty = unit(y, h);
		const green = grad.g(ty);
		let o = y * stride + 1;
		for (let x = 0; x < w; x++) {
			raw[o++] = red[x];
			raw[o++] = green;
			raw[o++] = grad.b(tx[x], ty);
		}
	}
	const head = Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		pngChunk('IHDR', be([4, w], [4, h], [1, 8], [1, 2], [1, 0], [1, 0], [1, 0])), // 8-bit RGB
	]);
	const idat = pngChunk('IDAT', deflateSync(raw, { level: 1 }));
	const iend = pngChunk('IEND', Buffer.alloc(0));
	return {
		build(gap) {
			// 'fiLl' chunks take the bulk; under 12 bytes (a chunk's overhead) lengthen the tEXt.
			const { full, last, absorb } = splitGap(gap, 12, PNG_FILL + 12);
			const text = pngChunk(
				'tEXt',
				Buffer.from(`Software\0${label(n)}${' '.repeat(absorb)}`, 'latin1'),
			);
			const fills: Part[] = full ? [{ repeat: pngFill(PNG_FILL), count: full }] : [];
			if (last) fills.push(...pngFill(last - 12));
			return [head, text, idat, ...fills, iend];
		},
	};
}

// ------------------------------------------------------------------------------------------
// JPEG: baseline, YCbCr 4:4:4, DC-only (each 8x8 block one flat colour, AC all zero).

const JPEG_COM_MAX = 65535 + 2; // COM segment: marker, then length (max 65535, counts itself), data
// Standard luminance tables (ITU T.81 K.3, K.5) for all three components. Only EOB is coded from
// the AC table, but it must be the standard one: ffmpeg's probing pass skips DHT and decodes with
// the standard tables.
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_VALS = [
	0x01,
	0x02,
	0x03,
	0x00,
	0x04,
	0x11,
	0x05,
	0x12,
	0x21,
	0x31,
	0x41,
	0x06,
	0x13,
	0x51,
	0x61,
	0x07,
	0x22,
	0x71,
	0x14,
	0x32,
	0x81,
	0x91,
	0xa1,
	0x08,
	0x23,
	0x42,
	0xb1,
	0xc1,
	0x15,
	0x52,
	0xd1,
	0xf0,
	0x24,
	0x33,
	0x62,
	0x72,
	0x82,
	0x09,
	0x0a,
	0x16,
	0x17,
	0x18,
	0x19,
	0x1a,
	0x25,
	0x26,
	0x27,
	0x28,
	0x29,
	0x2a,
	// then the 16-bit codes, regular: run r, sizes from 4 (r = 3), 3 (r <= 8), 2 (r <= 13) or 1 to 10
	...Array.from({ length: 13 }, (_, i) => i + 3).flatMap((r) => {
		const from = r === 3 ? 4 : r <= 8 ? 3 : r <= 13 ? 2 : 1;
		return Array.from({ length: 11 - from }, (_, k) => (r << 4) | (from + k));
	}),
];

function huffman(bits: number[], vals: number[]): Map<number, [number, number]> {
	const codes = new Map<number, [number, number]>();
	let code = 0;
	let k = 0;
	for (let len = 1; len <= 16; len++, code <<= 1) {
		for (let i = 0; i < bits[len - 1]; i++) codes.set(vals[k++], [code++, len]);
	}
	return codes;
}

function segment(marker: number, data: Buffer): Buffer {
	return Buffer.concat([be([1, 0xff], [1, marker], [2, data.length + 2]), data]);
}

function jpegModel(n: Norm): Omit<Model, 'natural'> {
	const { width: w, height: h } = n;
	const grad = gradient(seedBytes(n));
	const dc = huffman(DC_BITS, DC_VALS);
	const [eob, eobLen] = huffman(AC_BITS, AC_VALS).get(0x00) as [number, number];
	const bits = new Bits();
	const pred = [0, 0, 0];
	for (let by = 0; by < Math.ceil(h / 8); by++) {
		for (let bx = 0; bx < Math.ceil(w / 8); bx++) {
			const tx = unit(Math.min(bx * 8 + 4, w - 1), w); // block centre
			const ty = unit(Math.min(by * 8 + 4, h - 1), h);
			const [r, g, b] = [grad.r(tx), grad.g(ty), grad.b(tx, ty)];
			const ycc = [
				0.299 * r + 0.587 * g + 0.114 * b,
				128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
				128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
			];
			for (let c = 0; c < 3; c++) {
				// A flat block's DC coefficient is 8 * (v - 128); with DC quantiser 8 the level is v - 128.
				const level = Math.round(ycc[c]) - 128;
				const diff = level - pred[c];
				pred[c] = level;
				const cat = diff === 0 ? 0 : 32 - Math.clz32(Math.abs(diff));
				const [code, len] = dc.get(cat) as [number, number];
				bits.put([len, code], [cat, diff < 0 ? diff + (1 << cat) - 1 : diff], [eobLen, eob]);
			}
		}
	}
	const scan: number[] = []; // entropy-coded data with 0xff stuffed as ff 00
	for (const byte of bits.align(1).buffer()) scan.push(...(byte === 0xff ? [0xff, 0] : [byte]));
	const dht = (cls: number, counts: number[], vals: number[]): Buffer =>
		Buffer.from([cls << 4, ...counts, ...vals]);
	const tables = Buffer.concat([
		segment(0xdb, Buffer.from([0, ...new Array<number>(64).fill(8)])),
		segment(
			0xc0,
			Buffer.concat([
				be([1, 8], [2, h], [2, w], [1, 3]),
				Buffer.from([1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]),
			]),
		),
		segment(0xc4, Buffer.concat([dht(0, DC_BITS, DC_VALS), dht(1, AC_BITS, AC_VALS)])),
		segment(0xda, Buffer.from([3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0])),
		Buffer.from(scan),
		// EOI preceded by fill bytes (T.81 B.1.1.2): ffmpeg's probing pass skips the scan by its
		// unescaped length and overshoots a bare EOI if few bytes were stuffed ("EOI missing").
		Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xd9]),
	]);
	const head = Buffer.concat([
		Buffer.from([0xff, 0xd8]),
		segment(0xe0, Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0', 'latin1')), // JFIF 1.01, 1:1
	]);
	const com = (len: number): Part[] => [be([1, 0xff], [1, 0xfe], [2, len - 2]), { zeros: len - 4 }];
	return {
		build(gap) {
			// Zero-filled COM segments before the tables; a remainder under 4 bytes (a segment's
			// overhead) lengthens the comment text.
			const { full, last, absorb } = splitGap(gap, 4, JPEG_COM_MAX);
			const comment = segment(0xfe, Buffer.from(label(n) + ' '.repeat(absorb), 'latin1'));
			const fills: Part[] = full ? [{ repeat: com(JPEG_COM_MAX), count: full }] : [];
			if (last) fills.push(...com(last));
			return [head, comment, ...fills, tables];
		},
	};
}

// ------------------------------------------------------------------------------------------
// MP3: ID3v2.4 tag (padding lives here), a LAME-style 'Info' frame with the frame count, then
// MPEG-1 Layer III 128 kbps 44.1 kHz mono frames carrying a quiet seeded tone (one spectral line).

const MP3_RATE = 44100;
const MP3_SPF = 1152;
const ID3_MAX_BODY = 0x0fffffff; // 28-bit syncsafe size

const syncsafe = (v: number): number =>
	((v & 0xfe00000) << 3) | ((v & 0x1fc000) << 2) | ((v & 0x3f80) << 1) | (v & 0x7f);

/** A frame of 417 bytes, or 418 with the padding bit; `main` writes the side info and main data. */
function mp3Frame(padded: boolean, main: (b: Bits) => void): Buffer {
	const out = Buffer.alloc(417 + (padded ? 1 : 0));
	// sync, MPEG-1 Layer III without CRC; 128 kbps, 44.1 kHz, padding bit; mono
	Buffer.from([0xff, 0xfb, 0x90 | (padded ? 2 : 0), 0xc0]).copy(out);
	const bits = new Bits();
	main(bits);
	bits.buffer().copy(out, 4);
	return out;
}

function mp3Model(n: Norm): Omit<Model, 'natural'> {
	// At least 8 frames (0.21 s): ffmpeg only trusts its mp3 probe after several consecutive frames.
	const frames = Math.max(8, Math.round((n.duration * MP3_RATE) / MP3_SPF));
	// 144 * 128000 / 44100 = 417 + 141/147 bytes per frame: padded when the running fraction wraps.
	const padded = (i: number): boolean =>
		Math.floor(((i + 1) * 141) / 147) > Math.floor((i * 141) / 147);
	const [s0, s1] = seedBytes(n);
	const line = 5 + (s0 % 11); // pair index: spectral line 2*line, about 400..1200 Hz
	const gain = 172 + (s1 % 16); // quiet: about -60..-45 dB
	const tone = (b: Bits): void => {
		b.put([9, 0], [5, 0], [4, 0]); // main_data_begin (no bit reservoir), private bits, scfsi
		for (let gr = 0; gr < 2; gr++) {
			// prettier-ignore
			b.put(
				[12, line + 3], // part2_3_length: the main data below
				[9, line + 1], // big_values: pairs up to the tone's line
				[8, gain], // global_gain
				[4, 0], // scalefac_compress: no scale factors
				[1, 0], // window_switching_flag: normal long blocks
				[5, 1], [5, 1], [5, 1], // Huffman table 1 in all three regions
				[4, 0], [3, 0], // region0_count, region1_count
				[3, 0], // preflag, scalefac_scale, count1table_select
			);
		}
		for (let gr = 0; gr < 2; gr++) {
			for (let i = 0; i < line; i++) b.u(1, 1); // table 1 code for the pair (0, 0)
			b.put([2, 0b01], [1, gr]); // the pair (1, 0), then its sign
		}
	};
	const audio = [mp3Frame(false, tone), mp3Frame(true, tone)];
	const info = mp3Frame(padded(0), (b) => {
		b.put([32, 0], [32, 0], [32, 0], [32, 0], [8, 0]); // 17 bytes of empty side info
		b.put([32, 0x496e666f], [32, 1], [32, frames]); // 'Info', flags: frame count; audio frames
	});
	const body: Part[] = [info];
	for (let i = 1; i <= frames; i++) body.push(audio[padded(i) ? 1 : 0]);
	const text = Buffer.concat([Buffer.from([3]), Buffer.from(label(n), 'utf8')]); // 3: UTF-8
	const tsse = Buffer.concat([
		Buffer.from('TSSE', 'latin1'),
		be([4, syncsafe(text.length)], [2, 0]),
		text,
	]);
	return {
		build(gap) {
			// The padding is zeros after the ID3 tag's frames. A tag holds at most 256 MiB, so bigger
			// files get several consecutive tags (ID3v2 readers such as ffmpeg skip them in turn).
			const total = 10 + tsse.length + gap;
			const tags = Math.ceil(total / (10 + ID3_MAX_BODY));
			const bodies = total - 10 * tags;
			const parts: Part[] = [];
			for (let t = 0; t < tags; t++) {
				const size = Math.floor(bodies / tags) + (t < bodies % tags ? 1 : 0);
				parts.push(
					Buffer.concat([Buffer.from('ID3\x04\x00\x00', 'latin1'), be([4, syncsafe(size)])]),
				);
				if (t === 0) parts.push(tsse, { zeros: size - tsse.length });
				else parts.push({ zeros: size });
			}
			return [...parts, ...body];
		},
	};
}

// ------------------------------------------------------------------------------------------
// MP4: ftyp, moov, mdat with a 25 fps H.264 constrained-baseline stream, optional trailing 'free'.
// Each GOP (2 s) is one IDR frame - an I_PCM macroblock in the seed colour, which the other
// macroblocks copy by DC intra prediction without residual - then P frames that skip everything.

const FPS = 25;
const GOP = 50;
const TIMESCALE = 12800; // media timescale; one frame lasts 512 ticks

/** NAL unit with emulation prevention, prefixed by its 4-byte length as in MP4 samples. */
function nal(header: number, rbsp: Buffer): Buffer {
	const out: number[] = [header];
	let zeros = 0;
	for (const b of rbsp) {
		if (zeros >= 2 && b <= 3) {
			out.push(3);
			zeros = 0;
		}
		out.push(b);
		zeros = b === 0 ? zeros + 1 : 0;
	}
	return Buffer.concat([be([4, out.length]), Buffer.from(out)]);
}

function box(type: string, ...body: Buffer[]): Buffer {
	const payload = Buffer.concat(body);
	return Buffer.concat([be([4, payload.length + 8]), Buffer.from(type, 'latin1'), payload]);
}

const fullBox = (type: string, flags: number, ...body: Buffer[]): Buffer =>
	box(type, be([4, flags]), ...body);
const u32s = (...values: number[]): Buffer => be(...values.map((v): [number, number] => [4, v]));
const MATRIX = u32s(0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000);

function mp4Model(n: Norm): Omit<Model, 'natural'> {
	const w = n.width + (n.width & 1);
	const h = n.height + (n.height & 1);
	const mbw = Math.ceil(w / 16);
	const mbh = Math.ceil(h / 16);
	const mbs = mbw * mbh;
	const level = mbs <= 1620 ? 30 : mbs <= 8192 ? 40 : 51;
	const frames = Math.max(1, Math.round(n.duration * FPS));

	const cropX = (mbw * 16 - w) / 2; // in chroma samples (4:2:0)
	const cropY = (mbh * 16 - h) / 2;
	// prettier-ignore
	const sps = new Bits().put(
		[8, 66], [8, 0xc0], [8, level], // profile Baseline, constraint_set0/1 (constrained), level
		['ue', 0], ['ue', 0], ['ue', 2], // sps id, log2_max_frame_num - 4, pic_order_cnt_type 2
		['ue', 1], [1, 0], // max_num_ref_frames, gaps_in_frame_num_allowed
		['ue', mbw - 1], ['ue', mbh - 1], // size in macroblocks
		[1, 1], [1, 1], // frame_mbs_only, direct_8x8_inference
	);
	if (cropX || cropY) sps.put([1, 1], ['ue', 0], ['ue', cropX], ['ue', 0], ['ue', cropY]);
	else sps.u(1, 0);
	const spsNal = nal(0x67, sps.put([1, 0], [1, 1]).buffer()); // no VUI, rbsp trailing bits
	// prettier-ignore
	const pps = new Bits().put(
		['ue', 0], ['ue', 0], [1, 0], [1, 0], // pps/sps ids, CAVLC, no field pic order
		['ue', 0], ['ue', 0], ['ue', 0], // one slice group, one reference in each list
		[1, 0], [2, 0], ['se', 0], ['se', 0], ['se', 0], // no weighting, qp/qs 26, chroma qp offset 0
		[1, 0], [1, 0], [1, 0], [1, 1], // no deblocking ctrl/constrained intra/redundant pics; trailing
	);
	const ppsNal = nal(0x68, pps.buffer());

	const [r, g, b] = seedBytes(n);
	const yuv = [
		16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
		128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255,
		128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255,
	].map(Math.round);
	const idr = (idrPicId: number): Buffer => {
		// prettier-ignore
		const s = new Bits().put(
			['ue', 0], ['ue', 7], ['ue', 0], // first_mb_in_slice, slice_type I, pps id
			[4, 0], ['ue', idrPicId], // frame_num, idr_pic_id (consecutive IDRs differ)
			[1, 0], [1, 0], ['se', 0], // no_output_of_prior_pics, long_term_reference, slice_qp_delta
		);
		s.ue(25).align(0); // an I_PCM macroblock in the top-left corner
		for (let i = 0; i < 384; i++) s.u(8, yuv[i < 256 ? 0 : i < 320 ? 1 : 2]);
		for (let mb = 1; mb < mbs; mb++) {
			// I_16x16 with DC prediction and no residual: mb_type 3, chroma DC, qp delta 0, then an
			// empty luma DC block whose coeff_token depends on nC: 16 beside the PCM macroblock (a 6-bit
			// fixed code), else 0.
			s.put(['ue', 3], ['ue', 0], ['se', 0]);
			const pcmNeighbour = (mb === 1 && mbw > 1) || mb === mbw;
			s.put(pcmNeighbour ? [6, 0b000011] : [1, 1]);
		}
		return nal(0x65, s.u(1, 1).buffer());
	};
	const p = (frameNum: number): Buffer => {
		// prettier-ignore
		const s = new Bits().put(
			['ue', 0], ['ue', 5], ['ue', 0], [4, frameNum], // first mb, slice_type P, pps id, frame_num
			[1, 0], [1, 0], [1, 0], ['se', 0], // no ref overrides/reordering, sliding window, qp delta
			['ue', mbs], [1, 1], // one skip run over the whole frame, rbsp trailing bits
		);
		return nal(0x41, s.buffer());
	};
	const idrs = [idr(0), idr(1)];
	const ps = Array.from({ length: 16 }, (_, i) => p(i));
	const samples: Buffer[] = [];
	for (let i = 0; i < frames; i++) samples.push(i % GOP ? ps[(i % GOP) % 16] : idrs[(i / GOP) % 2]);
	const keyframes = samples.map((_, i) => i + 1).filter((i) => (i - 1) % GOP === 0);
	const mdatPayload = samples.reduce((sum, s) => sum + s.length, 0);

	const ftyp = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2avc1mp41', 'latin1'));
	const mediaDuration = frames * (TIMESCALE / FPS);
	const movieDuration = Math.round((frames * 1000) / FPS);
	const moov = (chunkOffset: number): Buffer => {
		// avcC: version 1, profile, compatibility, level, 4-byte NAL lengths, then one SPS and one PPS
		// (each after a 2-byte length: the low half of the 4-byte one that nal() put in front).
		const avcC = box(
			'avcC',
			Buffer.from([1, 66, 0xc0, level, 0xff, 0xe1]),
			spsNal.subarray(2),
			Buffer.from([1]),
			ppsNal.subarray(2),
		);
		const avc1 = box(
			'avc1',
			be([6, 0], [2, 1], [16, 0]), // reserved, data_reference_index, reserved
			be([2, w], [2, h], [4, 0x480000], [4, 0x480000], [4, 0], [2, 1]), // size, 72 dpi, 1 frame
			Buffer.alloc(32), // compressor name
			be([2, 0x18], [2, 0xffff]), // depth, pre_defined
			avcC,
		);
		const stbl = box(
			'stbl',
			fullBox('stsd', 0, be([4, 1]), avc1),
			fullBox('stts', 0, be([4, 1], [4, frames], [4, TIMESCALE / FPS])),
			fullBox('stss', 0, be([4, keyframes.length]), ...keyframes.map((k) => be([4, k]))),
			fullBox('stsc', 0, be([4, 1], [4, 1], [4, frames], [4, 1])), // one chunk holding every sample
			fullBox('stsz', 0, be([4, 0], [4, frames]), ...samples.map((s) => be([4, s.length]))),
			fullBox('stco', 0, be([4, 1], [4, chunkOffset])),
		);
		const minf = box(
			'minf',
			fullBox('vmhd', 1, be([2, 0], [2, 0], [2, 0], [2, 0])),
			box('dinf', fullBox('dref', 0, be([4, 1]), fullBox('url ', 1))),
			stbl,
		);
		const mdhd = u32s(0, 0, TIMESCALE, mediaDuration, 0x55c40000); // times, language 'und'
		const hdlr = Buffer.from('\0\0\0\0vide\0\0\0\0\0\0\0\0\0\0\0\0VideoHandler\0', 'latin1');
		const mdia = box('mdia', fullBox('mdhd', 0, mdhd), fullBox('hdlr', 0, hdlr), minf);
		// track 1, enabled and in movie (flags 3); then reserved, layer, group, volume; matrix; size
		const tkhd = Buffer.concat([u32s(0, 0, 1, 0, movieDuration), Buffer.alloc(16), MATRIX]);
		const trak = box('trak', fullBox('tkhd', 3, tkhd, u32s(w * 0x10000, h * 0x10000)), mdia);
		// times, timescale, duration, rate 1.0, volume 1.0 + reserved, matrix, pre_defined, next track
		const mvhd = Buffer.concat([u32s(0, 0, 1000, movieDuration, 0x10000, 0x1000000, 0, 0), MATRIX]);
		return box('moov', fullBox('mvhd', 0, mvhd, Buffer.alloc(24), u32s(2)), trak);
	};
	const head = Buffer.concat([ftyp, moov(0)]); // the offset's value does not change moov's size
	const moovFinal = moov(head.length + 8);
	return {
		build(gap) {
			// A trailing 'free' box takes the padding; under 8 bytes (its header) they extend mdat.
			const absorb = gap < 8 ? gap : 0;
			const free: Part[] =
				gap >= 8 ? [be([4, gap]), Buffer.from('free', 'latin1'), { zeros: gap - 8 }] : [];
			return [
				ftyp,
				moovFinal,
				be([4, 8 + mdatPayload + absorb]),
				Buffer.from('mdat', 'latin1'),
				...samples,
				{ zeros: absorb },
				...free,
			];
		},
	};
}

// ------------------------------------------------------------------------------------------
// GLB: glTF 2.0 binary with one coloured triangle; padding enlarges the BIN chunk and its buffer.

function glbModel(n: Norm): Omit<Model, 'natural'> {
	const s = seedBytes(n);
	// Multiples of 1/64 are exact in float32, so the accessor min/max match the data exactly.
	const verts = [0, 0, 0, 1 + s[0] / 64, 0, 0, s[1] / 128, 1 + s[2] / 64, s[3] / 64 - 2];
	const bin = Buffer.alloc(36);
	verts.forEach((v, i) => bin.writeFloatLE(v, i * 4));
	const axis = (i: number): number[] => [verts[i], verts[i + 3], verts[i + 6]];
	const min = [0, 1, 2].map((i) => Math.min(...axis(i)));
	const max = [0, 1, 2].map((i) => Math.max(...axis(i)));
	const json = (byteLength: number): Buffer => {
		const doc = {
			asset: { version: '2.0', generator: label(n) },
			scene: 0,
			scenes: [{ nodes: [0] }],
			nodes: [{ mesh: 0 }],
			meshes: [{ primitives: [{ attributes: { POSITION: 0 }, material: 0 }] }],
			materials: [
				{
					pbrMetallicRoughness: {
						baseColorFactor: [s[4] / 255, s[5] / 255, s[6] / 255, 1].map(
							(c) => Math.round(c * 1000) / 1000,
						),
					},
				},
			],
			accessors: [{ bufferView: 0, componentType: 5126, count: 3, type: 'VEC3', min, max }],
			bufferViews: [{ buffer: 0, byteLength: 36, target: 34962 }], // ARRAY_BUFFER
			buffers: [{ byteLength: 0 }],
		};
		// byteLength gets a fixed 10-character field, so the JSON length does not depend on padding.
		const text = JSON.stringify(doc).replace(
			'"byteLength":0}]}',
			`"byteLength":${String(byteLength).padEnd(10)}}]}`,
		);
		const raw = Buffer.from(text, 'utf8');
		return Buffer.concat([raw, Buffer.alloc((4 - (raw.length % 4)) % 4, 0x20)]);
	};
	return {
		build(gap) {
			const binLength = 36 + Math.ceil(gap / 4) * 4; // chunks stay 4-byte aligned: round up
			const jsonChunk = json(binLength);
			const total = 12 + 8 + jsonChunk.length + 8 + binLength;
			const le = (...v: number[]): Buffer => {
				const out = Buffer.alloc(v.length * 4);
				v.forEach((x, i) => out.writeUInt32LE(x, i * 4));
				return out;
			};
			return [
				le(0x46546c67, 2, total, jsonChunk.length, 0x4e4f534a),
				jsonChunk,
				le(binLength, 0x004e4942),
				bin,
				{ zeros: binLength - 36 },
			];
		},
	};
}
