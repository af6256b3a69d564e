/**
 * A minimal H.264 (AVC) encoder that emits only I_PCM macroblocks: every
 * macroblock carries its raw samples, so no transform, prediction or entropy
 * coding is needed, yet the stream is fully standard and any decoder (browser,
 * Discord, ffmpeg) plays it. Bitrate is huge per pixel, which is why the frames
 * are tiny.
 */

class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private used = 0;

  u(bitCount: number, value: number): this {
    for (let i = bitCount - 1; i >= 0; i--) this.bit((value >>> i) & 1);
    return this;
  }

  /** Unsigned Exp-Golomb code. */
  ue(value: number): this {
    const coded = value + 1;
    const length = Math.floor(Math.log2(coded)) + 1;
    this.u(length - 1, 0);
    return this.u(length, coded);
  }

  /** Signed Exp-Golomb code. */
  se(value: number): this {
    return this.ue(value > 0 ? 2 * value - 1 : -2 * value);
  }

  alignWithZeros(): this {
    while (this.used !== 0) this.bit(0);
    return this;
  }

  /** Raw bytes; only valid at a byte boundary (I_PCM samples). */
  raw(data: Uint8Array): this {
    if (this.used !== 0) throw new Error('BitWriter.raw needs byte alignment');
    for (const byte of data) this.bytes.push(byte);
    return this;
  }

  /** rbsp_trailing_bits: a stop bit, then zeros up to the byte boundary. */
  trailing(): this {
    return this.bit(1).alignWithZeros();
  }

  toBuffer(): Buffer {
    if (this.used !== 0) throw new Error('BitWriter not byte-aligned');
    return Buffer.from(this.bytes);
  }

  private bit(value: number): this {
    this.current = (this.current << 1) | value;
    this.used++;
    if (this.used === 8) {
      this.bytes.push(this.current);
      this.current = 0;
      this.used = 0;
    }
    return this;
  }
}

/** Wraps an RBSP into a NAL unit, inserting emulation-prevention bytes (00 00 0x → 00 00 03 0x). */
function nalUnit(nalRefIdc: number, nalUnitType: number, rbsp: Buffer): Buffer {
  const out: number[] = [(nalRefIdc << 5) | nalUnitType];
  let zeros = 0;
  for (const byte of rbsp) {
    if (zeros >= 2 && byte <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(byte);
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

export const PROFILE_BASELINE = 66;
/** constraint_set0 + constraint_set1: Constrained Baseline, which every decoder supports. */
export const CONSTRAINT_FLAGS = 0xc0;
/** Level 3.0: I_PCM needs the bitrate headroom; lower levels' limits would be exceeded. */
export const LEVEL = 30;

export interface EncodedVideo {
  sps: Buffer;
  pps: Buffer;
  /** One NAL unit (an IDR slice) per frame. */
  frames: Buffer[];
}

/** Luma (Y) and chroma (Cb, Cr) planes, 4:2:0, 8-bit. */
export interface Frame {
  y: Uint8Array;
  cb: Uint8Array;
  cr: Uint8Array;
}

/** Encodes frames of `width`×`height` (multiples of 16) as IDR-only Constrained Baseline. */
export function encodeH264(width: number, height: number, frames: Frame[]): EncodedVideo {
  if (width % 16 !== 0 || height % 16 !== 0) throw new Error('dimensions must be multiples of 16');
  const mbWidth = width / 16;
  const mbHeight = height / 16;

  const sps = new BitWriter()
    .u(8, PROFILE_BASELINE)
    .u(8, CONSTRAINT_FLAGS)
    .u(8, LEVEL)
    .ue(0) // seq_parameter_set_id
    .ue(0) // log2_max_frame_num_minus4 → frame_num is 4 bits
    .ue(2) // pic_order_cnt_type 2: order = decoding order, no POC fields in slices
    .ue(1) // max_num_ref_frames
    .u(1, 0) // gaps_in_frame_num_value_allowed_flag
    .ue(mbWidth - 1)
    .ue(mbHeight - 1)
    .u(1, 1) // frame_mbs_only_flag
    .u(1, 1) // direct_8x8_inference_flag
    .u(1, 0) // frame_cropping_flag
    .u(1, 0) // vui_parameters_present_flag (timing comes from the MP4 container)
    .trailing()
    .toBuffer();

  const pps = new BitWriter()
    .ue(0) // pic_parameter_set_id
    .ue(0) // seq_parameter_set_id
    .u(1, 0) // entropy_coding_mode_flag: CAVLC
    .u(1, 0) // bottom_field_pic_order_in_frame_present_flag
    .ue(0) // num_slice_groups_minus1
    .ue(0) // num_ref_idx_l0_default_active_minus1
    .ue(0) // num_ref_idx_l1_default_active_minus1
    .u(1, 0) // weighted_pred_flag
    .u(2, 0) // weighted_bipred_idc
    .se(0) // pic_init_qp_minus26
    .se(0) // pic_init_qs_minus26
    .se(0) // chroma_qp_index_offset
    .u(1, 0) // deblocking_filter_control_present_flag
    .u(1, 0) // constrained_intra_pred_flag
    .u(1, 0) // redundant_pic_cnt_present_flag
    .trailing()
    .toBuffer();

  const encoded = frames.map((frame, index) => {
    const slice = new BitWriter()
      .ue(0) // first_mb_in_slice
      .ue(7) // slice_type: I (all slices of the picture)
      .ue(0) // pic_parameter_set_id
      .u(4, 0) // frame_num: always 0 for IDR pictures
      .ue(index % 2) // idr_pic_id: consecutive IDRs must differ
      .u(1, 0) // no_output_of_prior_pics_flag
      .u(1, 0) // long_term_reference_flag
      .se(0); // slice_qp_delta
    for (let my = 0; my < mbHeight; my++) {
      for (let mx = 0; mx < mbWidth; mx++) {
        slice.ue(25).alignWithZeros(); // mb_type I_PCM, then pcm_alignment_zero_bits
        slice.raw(block(frame.y, width, mx * 16, my * 16, 16));
        slice.raw(block(frame.cb, width / 2, mx * 8, my * 8, 8));
        slice.raw(block(frame.cr, width / 2, mx * 8, my * 8, 8));
      }
    }
    return nalUnit(3, 5, slice.trailing().toBuffer()); // nal_unit_type 5: IDR slice
  });

  return { sps: nalUnit(3, 7, sps), pps: nalUnit(3, 8, pps), frames: encoded };
}

function block(plane: Uint8Array, stride: number, x0: number, y0: number, size: number): Uint8Array {
  const out = new Uint8Array(size * size);
  for (let y = 0; y < size; y++) {
    out.set(plane.subarray((y0 + y) * stride + x0, (y0 + y) * stride + x0 + size), y * size);
  }
  return out;
}
