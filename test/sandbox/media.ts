/**
 * Deterministic, valid media files built from scratch (Node built-ins only) for the sandbox server.
 *
 * Every file is described as a list of parts (buffers, zero runs and repeated groups), so `mediaSize()` is a sum
 * and `mediaStream()` can produce files of hundreds of MB without holding them in memory. The costly part of a file
 * (PNG pixels, JPEG scan, H.264 frames) is built once per spec and cached; padding to `sizeBytes` only adds parts.
 *
 * Deviations from an exact `sizeBytes`: GLB sizes are rounded up to a multiple of 4 (the format requires 4-byte
 * chunks). MP4 widths/heights are rounded up to even numbers (4:2:0 H.264 cannot crop odd sizes).
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
	/** Target total size; larger than the natural size pads with format-appropriate filler, smaller is ignored. */
	sizeBytes?: number;
}

/** Exact byte length of the file described by `spec`, without generating padding. */
export function mediaSize(spec: MediaSpec): number {
	return sizeOf(plan(spec));
}

/** Streams exactly `mediaSize(spec)` bytes lazily, in chunks of at most 64 KiB. Chunks must not be mutated. */
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

/** Coalesces parts into 64 KiB chunks (the last one shorter); full zero chunks are the shared ZERO_CHUNK. */
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
 * Splits `gap` filler bytes into units of `min`..`max` bytes (`full` units of `max`, then `last` if non-zero);
 * a remainder smaller than `min` is returned as `absorb`, for the format to hide somewhere that grows byte by byte.
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

/** Text for comment/metadata fields; it names the seed, so different seeds never give the same bytes. */
const label = (n: Norm): string => `Generation Service sandbox, seed ${n.seed}`;

// ------------------------------------------------------------------------------------------
// Small binary helpers

/** Big-endian fields given as [byteCount, value] pairs. */
function be(...fields: Array<[number, number]>): Buffer {
	const out = Buffer.alloc(fields.reduce((n, [len]) => n + len, 0));
	let pos = 0;
	for (const [len, value] of fields) {
		out.writeUIntBE(value, pos + Math.max(0, len - 6), Math.min(len, 6)); // wider fields: high bytes stay 0
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

/** The seeded RGB gradient shared by PNG and JPEG: red along x, green along y, blue along the diagonal. */
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

/** 'fiLl' (ancillary, private, safe-to-copy) chunk of `len` zero data bytes, without materialising the zeros. */
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
			// Whole 'fiLl' chunks take the bulk; a remainder under 12 bytes (a chunk's overhead) lengthens the tEXt.
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

const JPEG_COM_MAX = 65535 + 2; // a COM segment: marker + length field (max 65535, counts itself) + data
// Standard luminance tables (ITU T.81 K.3, K.5), used for all three components. Only EOB is coded from the AC
// table, but it must be the standard one: ffmpeg's probing pass skips DHT and decodes with the standard tables.
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_VALS = [
	...[
		0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
		0x22, 0x71,
	],
	...[
		0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33,
		0x62, 0x72,
	],
	...[0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a],
	// the 16-bit codes: run r with sizes from 4 (r = 3), 3 (r <= 8), 2 (r <= 13) or 1 up to 10
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
			const [tx, ty] = [unit(Math.min(bx * 8 + 4, w - 1), w), unit(Math.min(by * 8 + 4, h - 1), h)]; // block centre
			const [r, g, b] = [grad.r(tx), grad.g(ty), grad.b(tx, ty)];
			const ycc = [
				0.299 * r + 0.587 * g + 0.114 * b,
				128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
				128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
			];
			for (let c = 0; c < 3; c++) {
				// A flat block's DC coefficient is 8 * (v - 128); the DC quantiser is 8, so the level is v - 128.
				const level = Math.round(ycc[c]) - 128;
				const diff = level - pred[c];
				pred[c] = level;
				const cat = diff === 0 ? 0 : 32 - Math.clz32(Math.abs(diff));
				const [code, len] = dc.get(cat) as [number, number];
				bits
					.u(len, code)
					.u(cat, diff < 0 ? diff + (1 << cat) - 1 : diff)
					.u(eobLen, eob);
			}
		}
	}
	const scan: number[] = [];
	for (const byte of bits.align(1).buffer()) scan.push(...(byte === 0xff ? [0xff, 0x00] : [byte])); // byte stuffing
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
		// EOI preceded by fill bytes (T.81 B.1.1.2): ffmpeg's probing pass skips the scan by its unescaped length and
		// would overshoot a bare EOI when the scan has few stuffed bytes ("EOI missing, emulating").
		Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xd9]),
	]);
	const head = Buffer.concat([
		Buffer.from([0xff, 0xd8]),
		segment(0xe0, Buffer.from([0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0])), // JFIF 1.01, 1:1
	]);
	const com = (len: number): Part[] => [be([1, 0xff], [1, 0xfe], [2, len - 2]), { zeros: len - 4 }];
	return {
		build(gap) {
			// Zero-filled COM segments before the tables; a remainder under 4 bytes lengthens the comment text.
			const { full, last, absorb } = splitGap(gap, 4, JPEG_COM_MAX);
			const comment = segment(0xfe, Buffer.from(label(n) + ' '.repeat(absorb), 'latin1'));
			const fills: Part[] = full ? [{ repeat: com(JPEG_COM_MAX), count: full }] : [];
			if (last) fills.push(...com(last));
			return [head, comment, ...fills, tables];
		},
	};
}

// ------------------------------------------------------------------------------------------
// MP3: ID3v2.4 tag (padding lives here), a LAME-style 'Info' frame with the frame count, then MPEG-1 Layer III
// 128 kbps 44.1 kHz mono frames carrying a quiet seeded tone (one spectral line per granule).

const MP3_RATE = 44100;
const MP3_SPF = 1152;
const ID3_MAX_BODY = 0x0fffffff; // 28-bit syncsafe size

const syncsafe = (v: number): number =>
	((v & 0xfe00000) << 3) | ((v & 0x1fc000) << 2) | ((v & 0x3f80) << 1) | (v & 0x7f);

/** A frame of 417 bytes, or 418 with the padding bit; `main` writes the side info and main data. */
function mp3Frame(padded: boolean, main: (b: Bits) => void): Buffer {
	const out = Buffer.alloc(417 + (padded ? 1 : 0));
	be([1, 0xff], [1, 0xfb], [1, 0x90 | (padded ? 2 : 0)], [1, 0xc0]).copy(out); // MPEG-1 L3, no CRC, 128k, 44.1k, mono
	const bits = new Bits();
	main(bits);
	bits.buffer().copy(out, 4);
	return out;
}

function mp3Model(n: Norm): Omit<Model, 'natural'> {
	// At least 8 frames (0.21 s): ffmpeg only trusts its mp3 probe after several consecutive frames.
	const frames = Math.max(8, Math.round((n.duration * MP3_RATE) / MP3_SPF));
	// 128000 * 144 / 44100 = 417 + 141/147 bytes per frame: frame i is padded when the running fraction wraps.
	const padded = (i: number): boolean =>
		Math.floor(((i + 1) * 141) / 147) > Math.floor((i * 141) / 147);
	const [s0, s1] = seedBytes(n);
	const line = 5 + (s0 % 11); // pair index: spectral line 2*line, about 400..1200 Hz
	const gain = 172 + (s1 % 16); // quiet: about -60..-45 dB
	const tone = (b: Bits): void => {
		b.u(9, 0).u(5, 0).u(4, 0); // main_data_begin (no bit reservoir), private bits, scfsi
		for (let gr = 0; gr < 2; gr++) {
			// part2_3_length, big_values, global_gain (quiet), scalefac_compress, window switching off,
			// Huffman table 1 for all three regions, region counts, preflag, scalefac_scale, count1 table.
			b.u(12, line + 3)
				.u(9, line + 1)
				.u(8, gain)
				.u(4, 0)
				.u(1, 0)
				.u(5, 1)
				.u(5, 1)
				.u(5, 1)
				.u(4, 0)
				.u(3, 0)
				.u(3, 0);
		}
		for (let gr = 0; gr < 2; gr++) {
			for (let i = 0; i < line; i++) b.u(1, 1); // table 1 code for the pair (0, 0)
			b.u(2, 0b01).u(1, gr); // pair (1, 0), then its sign
		}
	};
	const audio = [mp3Frame(false, tone), mp3Frame(true, tone)];
	const info = mp3Frame(padded(0), (b) => {
		b.u(32, 0).u(32, 0).u(32, 0).u(32, 0).u(8, 0); // 17 bytes of empty side info
		b.u(32, 0x496e666f).u(32, 1).u(32, frames); // 'Info', flags: frame count present, frames (excluding this one)
	});
	const body: Part[] = [info];
	for (let i = 1; i <= frames; i++) body.push(audio[padded(i) ? 1 : 0]);
	const text = Buffer.concat([Buffer.from([3]), Buffer.from(label(n), 'utf8')]); // UTF-8 encoding byte
	const tsse = Buffer.concat([
		Buffer.from('TSSE', 'latin1'),
		be([4, syncsafe(text.length)], [2, 0]),
		text,
	]);
	return {
		build(gap) {
			// The padding is zeros after the frames of the ID3 tag; a tag holds at most 256 MiB, so big files get
			// several consecutive tags (which ID3v2 readers such as ffmpeg skip one after another).
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
// MP4: ftyp, moov, mdat with a 25 fps H.264 constrained-baseline stream, optional trailing 'free' box.
// Each GOP (2 s) is one IDR frame - an I_PCM macroblock in the seed colour that the other macroblocks copy by
// DC intra prediction without residual - followed by P frames that skip every macroblock.

const FPS = 25;
const GOP = 50;
const TIMESCALE = 12800; // media timescale; one frame lasts 512 ticks

/** NAL unit with emulation prevention, prefixed by its 4-byte length as in MP4 samples (avcC lengthSize 4). */
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
const MATRIX = be(
	[4, 0x10000],
	[4, 0],
	[4, 0],
	[4, 0],
	[4, 0x10000],
	[4, 0],
	[4, 0],
	[4, 0],
	[4, 0x40000000],
);

function mp4Model(n: Norm): Omit<Model, 'natural'> {
	const w = n.width + (n.width & 1);
	const h = n.height + (n.height & 1);
	const mbw = Math.ceil(w / 16);
	const mbh = Math.ceil(h / 16);
	const mbs = mbw * mbh;
	const level = mbs <= 1620 ? 30 : mbs <= 8192 ? 40 : 51;
	const frames = Math.max(1, Math.round(n.duration * FPS));

	const sps = new Bits().u(8, 66).u(8, 0xc0).u(8, level); // profile 66 + constraint_set0/1: constrained baseline
	sps.ue(0).ue(0).ue(2).ue(1).u(1, 0); // sps id, log2_max_frame_num - 4, poc type 2, 1 ref frame, no gaps
	sps
		.ue(mbw - 1)
		.ue(mbh - 1)
		.u(1, 1)
		.u(1, 1); // size in macroblocks, frame_mbs_only, direct_8x8_inference
	const [cropX, cropY] = [(mbw * 16 - w) / 2, (mbh * 16 - h) / 2];
	if (cropX || cropY) sps.u(1, 1).ue(0).ue(cropX).ue(0).ue(cropY);
	else sps.u(1, 0);
	const spsNal = nal(0x67, sps.u(1, 0).u(1, 1).buffer()); // no VUI, rbsp trailing bits
	// pps/sps ids 0, CAVLC, 1 slice group, 1 ref idx, no weighting, qp 26, no deblocking control, trailing bits
	const ppsNal = nal(
		0x68,
		new Bits()
			.ue(0)
			.ue(0)
			.u(1, 0)
			.u(1, 0)
			.ue(0)
			.ue(0)
			.ue(0)
			.u(1, 0)
			.u(2, 0)
			.se(0)
			.se(0)
			.se(0)
			.u(3, 0)
			.u(1, 1)
			.buffer(),
	);

	const [r, g, b] = seedBytes(n);
	const yuv = [
		16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
		128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255,
		128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255,
	].map(Math.round);
	const idr = (idrPicId: number): Buffer => {
		const s = new Bits().ue(0).ue(7).ue(0).u(4, 0).ue(idrPicId).u(1, 0).u(1, 0).se(0); // I slice header
		s.ue(25).align(0); // I_PCM macroblock in the top-left corner
		for (let i = 0; i < 384; i++) s.u(8, yuv[i < 256 ? 0 : i < 320 ? 1 : 2]);
		for (let mb = 1; mb < mbs; mb++) {
			// I_16x16 DC prediction, no coded residual: mb_type 3, chroma DC, qp delta 0, then an empty luma DC block
			// whose coeff_token depends on nC - 16 next to the PCM macroblock (6-bit fixed code), otherwise 0.
			s.ue(3).ue(0).se(0);
			const pcmNeighbour = (mb === 1 && mbw > 1) || mb === mbw;
			if (pcmNeighbour) s.u(6, 0b000011);
			else s.u(1, 1);
		}
		return nal(0x65, s.u(1, 1).buffer());
	};
	const p = (frameNum: number): Buffer =>
		// P slice header (no overrides, sliding window marking, qp delta 0), then one skip run over the frame
		nal(
			0x41,
			new Bits()
				.ue(0)
				.ue(5)
				.ue(0)
				.u(4, frameNum)
				.u(1, 0)
				.u(1, 0)
				.u(1, 0)
				.se(0)
				.ue(mbs)
				.u(1, 1)
				.buffer(),
		);
	const idrs = [idr(0), idr(1)];
	const ps = Array.from({ length: 16 }, (_, i) => p(i));
	const samples: Buffer[] = [];
	for (let i = 0; i < frames; i++) samples.push(i % GOP ? ps[(i % GOP) % 16] : idrs[(i / GOP) % 2]);
	const keyframes = samples.map((_, i) => i + 1).filter((i) => (i - 1) % GOP === 0);
	const mdatPayload = samples.reduce((sum, s) => sum + s.length, 0);

	const ftyp = box(
		'ftyp',
		Buffer.from('isom', 'latin1'),
		be([4, 0x200]),
		Buffer.from('isomiso2avc1mp41', 'latin1'),
	);
	const mediaDuration = frames * (TIMESCALE / FPS);
	const movieDuration = Math.round((frames * 1000) / FPS);
	const moov = (chunkOffset: number): Buffer => {
		const avcC = box(
			'avcC',
			be([1, 1], [1, 66], [1, 0xc0], [1, level], [1, 0xff], [1, 0xe1]),
			spsNal.subarray(2),
			Buffer.from([1]),
			ppsNal.subarray(2),
		);
		const avc1 = box(
			'avc1',
			be(
				[6, 0],
				[2, 1],
				[2, 0],
				[2, 0],
				[4, 0],
				[4, 0],
				[4, 0],
				[2, w],
				[2, h],
				[4, 0x480000],
				[4, 0x480000],
				[4, 0],
				[2, 1],
			),
			Buffer.alloc(32), // compressor name
			be([2, 0x18], [2, 0xffff]),
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
		const mdia = box(
			'mdia',
			fullBox(
				'mdhd',
				0,
				be([4, 0], [4, 0], [4, TIMESCALE], [4, mediaDuration], [2, 0x55c4], [2, 0]),
			), // 'und'
			fullBox(
				'hdlr',
				0,
				be([4, 0]),
				Buffer.from('vide', 'latin1'),
				Buffer.alloc(12),
				Buffer.from('VideoHandler\0', 'latin1'),
			),
			minf,
		);
		const tkhd = fullBox(
			'tkhd',
			3,
			be(
				[4, 0],
				[4, 0],
				[4, 1],
				[4, 0],
				[4, movieDuration],
				[8, 0],
				[2, 0],
				[2, 0],
				[2, 0],
				[2, 0],
			),
			MATRIX,
			be([4, w * 0x10000], [4, h * 0x10000]),
		);
		const mvhd = fullBox(
			'mvhd',
			0,
			be([4, 0], [4, 0], [4, 1000], [4, movieDuration], [4, 0x10000], [2, 0x100], [2, 0], [8, 0]),
			MATRIX,
			Buffer.alloc(24),
			be([4, 2]),
		);
		return box('moov', mvhd, box('trak', tkhd, mdia));
	};
	const head = Buffer.concat([ftyp, moov(0)]); // the offset's value does not change moov's size
	const moovFinal = moov(head.length + 8);
	return {
		build(gap) {
			// A trailing 'free' box takes the padding; fewer than 8 bytes (its header) become unused mdat bytes.
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
// GLB: glTF 2.0 binary with one coloured triangle; padding enlarges the BIN chunk and the buffer it holds.

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
		// byteLength is written in a fixed 10-character field, so the JSON length does not depend on the padding.
		const text = JSON.stringify(doc).replace(
			'"byteLength":0}]}',
			`"byteLength":${String(byteLength).padEnd(10)}}]}`,
		);
		const raw = Buffer.from(text, 'utf8');
		return Buffer.concat([raw, Buffer.alloc((4 - (raw.length % 4)) % 4, 0x20)]);
	};
	return {
		build(gap) {
			const binLength = 36 + Math.ceil(gap / 4) * 4; // chunks stay 4-byte aligned: sizes round up to 4
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
