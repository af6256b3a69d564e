/**
 * Real, decodable test photos made with sharp at test time (no binary
 * fixtures): unique small images, a phone-like JPEG with EXIF (orientation,
 * camera, GPS) and XMP, PNGs with text and eXIf chunks, and checks that a file
 * carries none of those.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';

/** A unique, decodable PNG (random pixels: every call a different SHA-256). */
export async function uniquePng(width = 24, height = 16): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** A unique, decodable JPEG. */
export async function uniqueJpeg(width = 24, height = 16): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

/** `n` unique PNG files named `{prefix}-{i}.png`, for attachments. */
export async function photoFiles(n: number, prefix: string): Promise<{ filename: string; bytes: Buffer }[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => ({
      filename: `${prefix}-${i + 1}.png`,
      bytes: await uniquePng(),
    })),
  );
}

/** Left half red, right half blue: which way it was turned shows in the pixels. */
function halves(width: number, height: number): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      if (x < width / 2) raw[o] = 220;
      else raw[o + 2] = 220;
    }
  }
  return raw;
}

export const GPS_LATITUDE = '48/1 51/1 2400/100';
export const CAMERA_MAKE = 'TestPhoneMaker';
export const XMP_MARKER = 'http://ns.adobe.com/xap/1.0/';

/**
 * A phone-like JPEG: stored `width`×`height`, EXIF orientation 6 (shown turned
 * 90° clockwise), camera make/model, a GPS position, and an XMP packet.
 */
export async function phoneJpeg(width = 300, height = 200, orientation = 6): Promise<Buffer> {
  return sharp(halves(width, height), { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 92 })
    .withMetadata({ orientation })
    .withExif({
      IFD0: { Make: CAMERA_MAKE, Model: 'Model Z', Software: 'CameraApp 1.0' },
      IFD3: {
        GPSLatitudeRef: 'N',
        GPSLatitude: GPS_LATITUDE,
        GPSLongitudeRef: 'E',
        GPSLongitude: '2/1 17/1 4000/100',
      },
    })
    .withXmp(
      `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:City="Paris"/></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`,
    )
    .toBuffer();
}

/** A PNG chunk (length, type, data, CRC). */
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/** A minimal little-endian TIFF/EXIF block holding the camera make (for an `eXIf` chunk). */
function exifBlock(make: string): Buffer {
  const value = Buffer.from(`${make}\0`, 'latin1');
  const b = Buffer.alloc(8 + 2 + 12 + 4);
  b.write('II', 0, 'latin1');
  b.writeUInt16LE(42, 2);
  b.writeUInt32LE(8, 4);
  b.writeUInt16LE(1, 8); // one entry
  b.writeUInt16LE(0x010f, 10); // Make
  b.writeUInt16LE(2, 12); // ASCII
  b.writeUInt32LE(value.length, 14);
  b.writeUInt32LE(b.length, 18); // value right after the IFD
  b.writeUInt32LE(0, 22); // no next IFD
  return Buffer.concat([b, value]);
}

/**
 * A PNG with `tEXt`, `iTXt`, `zTXt` and `eXIf` chunks after IHDR (what phone
 * and editor PNGs carry), and its raw RGB pixels.
 */
export async function pngWithMetadata(width = 64, height = 48): Promise<{ png: Buffer; pixels: Buffer }> {
  const pixels = randomBytes(width * height * 3);
  const plain = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
  const ihdrEnd = 8 + 8 + 13 + 4;
  const extra = Buffer.concat([
    chunk('tEXt', Buffer.from('Comment\0Taken at 12 Rue Example, Paris', 'latin1')),
    chunk('iTXt', Buffer.from('Author\0\0\0\0\0Jane Example', 'utf8')),
    chunk(
      'zTXt',
      Buffer.concat([
        Buffer.from('Software\0\0', 'latin1'),
        Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]),
      ]),
    ),
    chunk('eXIf', exifBlock(CAMERA_MAKE)),
  ]);
  return {
    png: Buffer.concat([plain.subarray(0, ihdrEnd), extra, plain.subarray(ihdrEnd)]),
    pixels,
  };
}

/** The chunk types of a PNG, in order. */
export function pngChunks(png: Buffer): string[] {
  const out: string[] = [];
  let at = 8;
  while (at + 8 <= png.length) {
    const len = png.readUInt32BE(at);
    out.push(png.toString('latin1', at + 4, at + 8));
    at += 12 + len;
  }
  return out;
}

/** JPEG markers (APPn etc.) before the image data. */
export function jpegSegments(jpeg: Buffer): { marker: number; head: string }[] {
  const out: { marker: number; head: string }[] = [];
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at] === 0xff) {
    const marker = jpeg[at + 1] ?? 0;
    if (marker === 0xda) break; // start of scan
    const len = jpeg.readUInt16BE(at + 2);
    out.push({ marker, head: jpeg.toString('latin1', at + 4, at + 4 + Math.min(len - 2, 32)) });
    at += 2 + len;
  }
  return out;
}

/**
 * Byte strings that betray metadata, whatever the format (long enough never to
 * turn up by chance in compressed image data; PNG chunk types are checked with
 * pngChunks).
 */
export const METADATA_MARKERS = [
  'Exif\0\0',
  XMP_MARKER,
  'adobe:ns:meta',
  'photoshop:City',
  CAMERA_MAKE,
  'CameraApp',
  'Jane Example',
  'Rue Example',
  'ICC_PROFILE',
];

export function metadataFound(bytes: Buffer): string[] {
  return METADATA_MARKERS.filter((m) => bytes.includes(Buffer.from(m, 'latin1')));
}
