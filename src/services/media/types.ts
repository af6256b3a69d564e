/**
 * The bot's single internal view of a media-service task, whatever shape the
 * service used to say it (webhook, fetch, or synchronous response). Every quirk
 * of the wire format is absorbed by the parsers in ./schemas.ts.
 */

/**
 * The operations and their types, each declared by its own module in
 * src/services/operations/ by augmenting this interface (declaration merging):
 *
 *   declare module '../media/types.js' {
 *     interface OperationTypes { remix: { params: RemixParams; outputs: RemixOutputs } }
 *   }
 *
 * `outputs` is the finished result, its `kind` the operation's name. The media and store
 * layers sit below the operations, so they name no operation: what they check at run time
 * (the names, the stored results) is passed in from the registry.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by augmentation
export interface OperationTypes {}

export type Operation = keyof OperationTypes & string;

/** The parameters of each operation. An operation without them does not compile (`params` missing). */
export type ParamsByOperation = { [K in Operation]: OperationTypes[K]['params'] };
export type ParamsOf<K extends Operation> = ParamsByOperation[K];

/** The finished result of `K`; `never` (no module can produce it) unless its `kind` is `K`. */
export type OutputsOf<K extends Operation> = OperationTypes[K]['outputs'] extends { kind: K }
  ? OperationTypes[K]['outputs']
  : never;

/** Any operation's finished result, told apart by `kind`. */
export type TaskOutputs = { [K in Operation]: OutputsOf<K> }[Operation];

/** Normalised lifecycle; `finished` and `failed` are terminal. */
export type TaskState = 'queued' | 'processing' | 'finished' | 'failed';

export interface TaskResult {
  operation: Operation;
  /** Absent on the upload processing result (a spec quirk): correlate by jobId. */
  taskId?: string;
  state: TaskState;
  /** 0..100 integer; the video result sends it as a string, normalised here. */
  percentage?: number;
  /** The status string exactly as the service sent it (absent on finished video). */
  rawStatus?: string;
  /** Human-readable status text (upload results). */
  message?: string;
  /** Present when finished. */
  outputs?: TaskOutputs;
  /** Service error messages (`errors[].msg`) when failed. */
  errors?: string[];
  /** The payload as received, for logs. */
  raw: unknown;
}

export const ETHNICITIES = [
  'asian',
  'black',
  'latino',
  'middle eastern',
  'native american',
  'pacific islander',
  'white',
] as const;
export type Ethnicity = (typeof ETHNICITIES)[number];
export const GENDERS = ['female', 'male'] as const;
export type Gender = (typeof GENDERS)[number];
export const ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21'] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];
export const MAGIC_PROMPT_OPTIONS = ['AUTO', 'ON', 'OFF'] as const;
export type MagicPromptOption = (typeof MAGIC_PROMPT_OPTIONS)[number];

export interface UpscaleParams {
  imageUrl: string;
  prompt: string;
  resemblance: number;
  detail?: number;
  seed?: number;
  magicPromptOption?: MagicPromptOption;
}

export interface WebhookTarget {
  url: string;
  secret: string;
}

export interface SongExtendParams {
  parentTaskId: string;
  songId: string;
  /** Seconds into the song. */
  continueAt?: number;
}

export interface VideoExtendParams {
  parentTaskId: string;
  prompt: string;
  imageUrl?: string;
  endImageUrl?: string;
  enhancePrompt?: boolean;
  aspectRatio?: AspectRatio;
}

/** One training image: either a URL, or a source the client streams as base64. */
export interface PhotoSource {
  /** Public URL of the image (used as-is with MEDIA_PHOTO_FORMAT=url). */
  url: string;
  /**
   * Opens the image bytes (used with MEDIA_PHOTO_FORMAT=base64); called lazily, in order, once
   * per send: again when the service answered 429 and the client sends the upload again.
   */
  open?: () => Promise<AsyncIterable<Uint8Array>>;
}

export interface PhotoUploadParams {
  photos: PhotoSource[];
  ethnicity: Ethnicity;
  gender: Gender;
  age?: number;
}

/** The service request body: JSON text, or a stream (training photos as base64). */
export type RequestBody = string | AsyncIterable<string>;

export interface BodyOptions {
  /** Webhook fields of an asynchronous operation (absent: the bot polls). */
  webhook?: WebhookTarget;
  /** MEDIA_PHOTO_FORMAT. */
  photoFormat: 'base64' | 'url';
}
