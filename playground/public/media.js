// Attachments and media as the client shows them: images inline, audio in a player card, video
// in a player, any other file as a row with its name and size.

import { el, icon } from './dom.js';

const EXT = {
  image: /\.(png|jpe?g|gif|webp|avif)(?:[?#]|$)/i,
  video: /\.(mp4|webm|mov|m4v)(?:[?#]|$)/i,
  audio: /\.(wav|mp3|ogg|oga|flac|m4a|aac|opus)(?:[?#]|$)/i,
};

/** 'image' | 'video' | 'audio' | 'file', from the content type, else the file name or URL. */
export function mediaKind(contentType, nameOrUrl = '') {
  const type = String(contentType ?? '')
    .split(';')[0]
    .trim();
  if (/^image\//.test(type)) return 'image';
  if (/^video\//.test(type)) return 'video';
  if (/^audio\//.test(type)) return 'audio';
  if (type && type !== 'application/octet-stream') return 'file';
  for (const [kind, re] of Object.entries(EXT)) if (re.test(nameOrUrl)) return kind;
  return 'file';
}

/** "340 bytes", "12.5 KB", "3.1 MB" (the client's units). */
export function formatSize(bytes) {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '';
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(2)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MB`;
}

export const fileNameOf = (url) => {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() || 'file');
  } catch {
    return 'file';
  }
};

const SAFE = /^https?:\/\//i;
const safe = (url) => (SAFE.test(String(url ?? '')) ? url : undefined);

/** Fits width × height into a box, keeping the ratio (unknown sizes get the box's width). */
function fit(width, height, maxW, maxH) {
  if (!width || !height) return {};
  const scale = Math.min(1, maxW / width, maxH / height);
  return { width: Math.round(width * scale), height: Math.round(height * scale) };
}

export function image(media, { maxW = 550, maxH = 350, alt = '', cls = 'media-image' } = {}) {
  const size = fit(media.width, media.height, maxW, maxH);
  const img = el('img', {
    src: safe(media.proxy_url ?? media.url),
    alt: alt || media.description || media.filename || 'image',
    loading: 'lazy',
    width: size.width,
    height: size.height,
    style: { maxWidth: `${maxW}px`, maxHeight: `${maxH}px` },
  });
  return el('a', { class: cls, href: safe(media.url), target: '_blank', rel: 'noopener noreferrer' }, img);
}

export function video(url, { cls = 'media-video' } = {}) {
  return el(
    'div',
    { class: cls },
    el('video', { src: safe(url), controls: true, preload: 'metadata', 'aria-label': fileNameOf(url) }),
  );
}

/** The client's audio attachment: file icon, name and size, then a player. */
export function audioCard(url, name, size) {
  return el(
    'div',
    { class: 'audio-card' },
    el('div', { class: 'file-meta' }, ...fileParts(url, name, size)),
    el('audio', { src: safe(url), controls: true, preload: 'none', 'aria-label': name }),
  );
}

/** A file's icon, its name (a link) and size, and a download button: a file row's and an audio card's. */
function fileParts(url, name, size) {
  return [
    icon('file', 28),
    el(
      'div',
      {},
      el('a', {
        href: safe(url),
        target: '_blank',
        rel: 'noopener noreferrer',
        class: 'file-name',
        text: name,
      }),
      el('div', { class: 'file-size', text: formatSize(size) }),
    ),
    el(
      'a',
      {
        href: safe(url),
        download: name,
        class: 'file-download',
        title: 'Download',
        'aria-label': `Download ${name}`,
      },
      icon('download', 20),
    ),
  ];
}

export function fileRow(url, name, size) {
  return el('div', { class: 'file-row' }, ...fileParts(url, name, size));
}

/** One message attachment, the way the client draws its kind. */
export function attachment(a) {
  const name = a.filename ?? fileNameOf(a.url);
  switch (mediaKind(a.content_type, name)) {
    case 'image':
      return image(a, { alt: a.description ?? name });
    case 'video':
      return video(a.url);
    case 'audio':
      return audioCard(a.url, name, a.size);
    default:
      return fileRow(a.url, name, a.size);
  }
}
