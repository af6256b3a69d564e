/**
 * Result "videos" are real MP4 files (ISO BMFF, `avc1` H.264 track, moov before
 * mdat so players can start at once). MP4/H.264 is what Discord and every
 * browser embed as video; ffmpeg is not guaranteed to exist where the emulator
 * runs, and committing binaries is avoided, so the file is built here from the
 * I_PCM encoder in ./h264.ts.
 */
import { CONSTRAINT_FLAGS, LEVEL, PROFILE_BASELINE, encodeH264, type Frame } from './h264.js';

function u8(value: number): Buffer {
  return Buffer.from([value & 0xff]);
}
function u16(value: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(value);
  return b;
}
function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value >>> 0);
  return b;
}
function zeros(count: number): Buffer {
  return Buffer.alloc(count);
}

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  return Buffer.concat([u32(8 + body.length), Buffer.from(type, 'ascii'), body]);
}
function fullBox(type: string, version: number, flags: number, ...payload: Buffer[]): Buffer {
  return box(type, u32((version << 24) | flags), ...payload);
}

const UNITY_MATRIX = Buffer.concat(
  [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].map((value) => u32(value)),
);

/** A white bar sweeping left to right over a gradient: visibly "moving" when played. */
function testPattern(width: number, height: number, frameCount: number): Frame[] {
  const frames: Frame[] = [];
  for (let f = 0; f < frameCount; f++) {
    const y = new Uint8Array(width * height);
    const barStart = Math.floor((f / frameCount) * width);
    for (let row = 0; row < height; row++) {
      for (let col = 0; col < width; col++) {
        const inBar = col >= barStart && col < barStart + width / 8;
        // Studio range 16..235; no zero bytes keeps the stream free of start-code look-alikes.
        y[row * width + col] = inBar ? 235 : 40 + Math.floor((row / height) * 120);
      }
    }
    const chroma = (width / 2) * (height / 2);
    frames.push({ y, cb: new Uint8Array(chroma).fill(150), cr: new Uint8Array(chroma).fill(110) });
  }
  return frames;
}

export function makeMp4(width = 64, height = 64, fps = 10, frameCount = 10): Buffer {
  const video = encodeH264(width, height, testPattern(width, height, frameCount));
  // Samples are length-prefixed NAL units (lengthSizeMinusOne = 3 in avcC).
  const samples = video.frames.map((nal) => Buffer.concat([u32(nal.length), nal]));
  const timescale = 1000;
  const sampleDelta = Math.round(timescale / fps);
  const duration = sampleDelta * frameCount;

  const avcC = box(
    'avcC',
    u8(1), // configurationVersion
    u8(PROFILE_BASELINE),
    u8(CONSTRAINT_FLAGS),
    u8(LEVEL),
    u8(0xff), // reserved 6 bits + lengthSizeMinusOne = 3
    u8(0xe1), // reserved 3 bits + one SPS
    u16(video.sps.length),
    video.sps,
    u8(1), // one PPS
    u16(video.pps.length),
    video.pps,
  );
  const compressorName = zeros(32);
  const avc1 = box(
    'avc1',
    zeros(6), // reserved
    u16(1), // data_reference_index
    zeros(16), // pre_defined + reserved
    u16(width),
    u16(height),
    u32(0x00480000), // 72 dpi horizontal
    u32(0x00480000), // 72 dpi vertical
    u32(0), // reserved
    u16(1), // frame_count per sample
    compressorName,
    u16(0x0018), // depth: colour, no alpha
    u16(0xffff), // pre_defined = -1
    avcC,
  );

  const moovFor = (chunkOffset: number): Buffer => {
    const stbl = box(
      'stbl',
      fullBox('stsd', 0, 0, u32(1), avc1),
      fullBox('stts', 0, 0, u32(1), u32(frameCount), u32(sampleDelta)),
      // No stss box: every sample is a sync sample (all frames are IDR).
      fullBox('stsc', 0, 0, u32(1), u32(1), u32(frameCount), u32(1)),
      fullBox('stsz', 0, 0, u32(0), u32(frameCount), ...samples.map((s) => u32(s.length))),
      fullBox('stco', 0, 0, u32(1), u32(chunkOffset)),
    );
    const minf = box(
      'minf',
      fullBox('vmhd', 0, 1, u16(0), zeros(6)),
      box('dinf', fullBox('dref', 0, 0, u32(1), fullBox('url ', 0, 1))),
      stbl,
    );
    const mdia = box(
      'mdia',
      fullBox('mdhd', 0, 0, u32(0), u32(0), u32(timescale), u32(duration), u16(0x55c4), u16(0)), // 'und'
      fullBox('hdlr', 0, 0, u32(0), Buffer.from('vide', 'ascii'), zeros(12), Buffer.from('VideoHandler\0')),
      minf,
    );
    const tkhd = fullBox(
      'tkhd',
      0,
      3, // enabled | in movie
      u32(0), // creation_time
      u32(0), // modification_time
      u32(1), // track_ID
      u32(0), // reserved
      u32(duration), // in movie timescale (same 1000)
      zeros(8),
      u16(0), // layer
      u16(0), // alternate_group
      u16(0), // volume: video track
      u16(0),
      UNITY_MATRIX,
      u32(width << 16),
      u32(height << 16),
    );
    const mvhd = fullBox(
      'mvhd',
      0,
      0,
      u32(0),
      u32(0),
      u32(timescale),
      u32(duration),
      u32(0x00010000), // rate 1.0
      u16(0x0100), // volume 1.0
      zeros(10),
      UNITY_MATRIX,
      zeros(24), // pre_defined
      u32(2), // next_track_ID
    );
    return box('moov', mvhd, box('trak', tkhd, mdia));
  };

  const ftyp = box(
    'ftyp',
    Buffer.from('isom', 'ascii'),
    u32(0x200),
    Buffer.from('isomiso2avc1mp41', 'ascii'),
  );
  // moov's size does not depend on the offset value, so measure once, then build for real.
  const moovSize = moovFor(0).length;
  const moov = moovFor(ftyp.length + moovSize + 8);
  return Buffer.concat([ftyp, moov, box('mdat', ...samples)]);
}
