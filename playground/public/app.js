// The playground page: a small Discord-like client over the playground server's /api.
// Plain ES module, no build step.

const $ = (sel) => document.querySelector(sel);
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
};

const OPT = {
  SUB: 1,
  GROUP: 2,
  STRING: 3,
  INTEGER: 4,
  BOOLEAN: 5,
  USER: 6,
  CHANNEL: 7,
  NUMBER: 10,
  ATTACHMENT: 11,
};
const state = { users: [], channels: [], commands: [], userId: '', channelId: '', botId: '' };

async function api(path, body) {
  const res = await fetch(
    path,
    body === undefined
      ? {}
      : {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        },
  );
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  const type = res.headers.get('content-type') ?? '';
  return type.includes('json') ? res.json() : res.text();
}

// ------------------------------------------------------------------ text rendering

const escapeHtml = (s) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function relative(unix) {
  const diff = unix * 1000 - Date.now();
  const abs = Math.abs(diff);
  const unit =
    abs < 60e3
      ? ['second', 1e3]
      : abs < 3600e3
        ? ['minute', 60e3]
        : abs < 86400e3
          ? ['hour', 3600e3]
          : ['day', 86400e3];
  return new Intl.RelativeTimeFormat('en', { numeric: 'auto' }).format(Math.round(diff / unit[1]), unit[0]);
}

/** Discord markdown subset: bold, code, links, mentions, channels, timestamps. */
function markdown(text) {
  let html = escapeHtml(text ?? '');
  html = html.replace(/`([^`]+)`/g, '<code>$1</code>');
  html = html.replace(/\*\*([^*]+)\*\*/g, '<b>$1</b>');
  html = html.replace(
    /\[([^\]]+)\]\((https?:[^)\s]+)\)/g,
    '<a href="$2" target="_blank" rel="noopener">$1</a>',
  );
  html = html.replace(
    /&lt;@!?(\d+)&gt;/g,
    (_m, id) => `<span class="mention">@${escapeHtml(userName(id))}</span>`,
  );
  html = html.replace(
    /&lt;#(\d+)&gt;/g,
    (_m, id) => `<a href="#" class="mention" data-channel="${id}">#${escapeHtml(channelName(id))}</a>`,
  );
  // Discord shows backslash-escaped markdown characters as themselves.
  html = html.replace(/\\([[\]*_`~|>#-])/g, '$1');
  html = html.replace(
    /&lt;t:(\d+):[RFfDdTt]&gt;/g,
    (_m, t) => `<time datetime="${new Date(t * 1000).toISOString()}">${relative(Number(t))}</time>`,
  );
  return html;
}

const userName = (id) =>
  state.users.find((u) => u.id === id)?.name ?? (id === state.botId ? 'Media bot' : id);
const channelName = (id) => state.channels.find((c) => c.id === id)?.name ?? id;

const MEDIA = [
  [/\.(png|jpe?g|gif|webp)(\?|$)/i, (u) => el('img', { src: u, alt: 'result image', loading: 'lazy' })],
  [
    /\.(wav|mp3|ogg|m4a)(\?|$)/i,
    (u) => el('audio', { src: u, controls: true, preload: 'none', 'aria-label': 'result audio' }),
  ],
  [
    /\.(mp4|webm|mov)(\?|$)/i,
    (u) => el('video', { src: u, controls: true, preload: 'metadata', 'aria-label': 'result video' }),
  ],
];

function mediaFor(urls) {
  const seen = new Set();
  const out = [];
  for (const u of urls) {
    if (seen.has(u)) continue;
    seen.add(u);
    const m = MEDIA.find(([re]) => re.test(u));
    if (m) out.push(m[1](u));
  }
  return out.length ? el('div', { class: 'media' }, out) : null;
}

function urlsIn(value) {
  return JSON.stringify(value).match(/https?:\/\/[^"\s)\\]+/g) ?? [];
}

// ------------------------------------------------------------------ messages

function renderEmbed(e) {
  const color = typeof e.color === 'number' ? `#${e.color.toString(16).padStart(6, '0')}` : undefined;
  const box = el('div', { class: 'embed', style: color ? `border-left-color:${color}` : undefined });
  if (e.title) box.append(el('div', { class: 'title', text: e.title }));
  if (e.description) {
    const d = el('div', { class: 'desc' });
    d.innerHTML = markdown(e.description);
    box.append(d);
  }
  if (Array.isArray(e.fields) && e.fields.length) {
    box.append(
      el(
        'div',
        { class: 'fields' },
        e.fields.map((f) => {
          const v = el('span');
          v.innerHTML = markdown(f.value);
          return el('div', { class: 'field' }, el('b', { text: f.name }), v);
        }),
      ),
    );
  }
  if (e.image?.url) box.append(el('img', { src: e.image.url, alt: e.title ?? 'image' }));
  if (e.footer?.text) box.append(el('div', { class: 'footer', text: e.footer.text }));
  return box;
}

function renderButtons(msg) {
  const rows = Array.isArray(msg.data.components) ? msg.data.components : [];
  const buttons = rows
    .flatMap((r) => (Array.isArray(r.components) ? r.components : []))
    .filter((c) => c.type === 2 || c.type === 3);
  if (!buttons.length) return null;
  return el(
    'div',
    { class: 'buttons' },
    buttons.map((b) => {
      if (b.type === 3)
        return el(
          'select',
          {
            onchange: (e) =>
              e.target.value && clickButton(msg.id, b.custom_id, b.placeholder, [e.target.value]),
          },
          [
            el('option', { value: '' }, b.placeholder ?? 'Choose…'),
            ...(b.options ?? []).map((o) => el('option', { value: o.value }, o.label)),
          ],
        );
      if (b.style === 5 && b.url)
        return el(
          'a',
          { href: b.url, target: '_blank', rel: 'noopener', class: 'style-5' },
          b.label ?? 'link',
        );
      return el(
        'button',
        {
          type: 'button',
          class: `style-${b.style ?? 2}`,
          disabled: b.disabled ?? false,
          onclick: () => clickButton(msg.id, b.custom_id, b.label),
        },
        `${b.emoji?.name ? `${b.emoji.name} ` : ''}${b.label ?? b.custom_id}`,
      );
    }),
  );
}

function renderMessage(msg) {
  const d = msg.data;
  const author =
    d.author?.id === state.botId ? 'Media bot' : (d.author?.global_name ?? d.author?.username ?? 'someone');
  const box = el('article', {
    class: `msg${msg.ephemeral ? ' ephemeral' : ''}`,
    'data-id': msg.id,
    'aria-label': `Message from ${author}`,
  });
  box.append(
    el(
      'div',
      { class: 'head' },
      el('b', { text: author }),
      ` · ${new Date(d.edited_timestamp ?? d.timestamp).toLocaleTimeString()}`,
      msg.ephemeral ? ' · only you can see this' : '',
      msg.edits ? ` · edited ${msg.edits}×` : '',
    ),
  );
  if (d.content) {
    const c = el('div', { class: 'content' });
    c.innerHTML = markdown(d.content);
    box.append(c);
  }
  for (const e of d.embeds ?? []) box.append(renderEmbed(e));
  const files = (d.attachments ?? []).map((a) => a.url);
  const media = mediaFor([...files, ...urlsIn({ c: d.content, e: d.embeds })]);
  if (media) box.append(media);
  const buttons = renderButtons(msg);
  if (buttons) box.append(buttons);
  return box;
}

let loadingMessages = false;
let again = false;
async function loadMessages() {
  if (!state.channelId) return;
  if (loadingMessages) {
    again = true;
    return;
  }
  loadingMessages = true;
  try {
    const list = await api(`/api/messages?channelId=${state.channelId}&userId=${state.userId}`);
    const box = $('#messages');
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    const playing = [...box.querySelectorAll('audio,video')].some((m) => !m.paused);
    if (playing) return; // keep a playing preview alive; the next event redraws
    box.replaceChildren(...list.map(renderMessage));
    if (atBottom) box.scrollTop = box.scrollHeight;
  } finally {
    loadingMessages = false;
    if (again) {
      again = false;
      void loadMessages();
    }
  }
}

// ------------------------------------------------------------------ channels and members

function renderChannels() {
  const nav = $('#channels');
  const top = state.channels.filter((c) => c.type === 0 || c.type === 5);
  nav.replaceChildren(
    el('h2', { class: 'sr-only', text: 'Channels' }),
    ...top.flatMap((c) => [
      channelButton(c, false),
      ...state.channels
        .filter((t) => t.parentId === c.id && (t.type === 11 || t.type === 10))
        .map((t) => channelButton(t, true)),
    ]),
  );
  $('#channel-title').textContent = `#${channelName(state.channelId)}`;
}

function channelButton(c, thread) {
  return el(
    'button',
    {
      type: 'button',
      class: thread ? 'thread' : '',
      'aria-current': c.id === state.channelId ? 'true' : 'false',
      'data-channel': c.id,
      onclick: () => selectChannel(c.id),
    },
    `${thread ? '🧵 ' : '# '}${c.name}`,
  );
}

function selectChannel(id) {
  state.channelId = id;
  renderChannels();
  $('#channels').classList.remove('open');
  void loadMessages();
}

async function loadState() {
  const s = await api('/api/state');
  const first = !state.botId;
  Object.assign(state, { users: s.users, channels: s.channels, commands: s.commands, botId: s.botId });
  if (first) {
    state.userId = s.users[0].id;
    state.channelId = s.channels.find((c) => c.name === 'general')?.id ?? s.channels[0].id;
    $('#user').replaceChildren(
      ...s.users.map((u) => el('option', { value: u.id }, `${u.name}${u.admin ? ' — Manage Server' : ''}`)),
    );
    $('#store').textContent =
      `Store: ${s.store}. Song to extend: ${s.hints.songTask}, video: ${s.hints.videoTask}.`;
    for (const box of document.querySelectorAll('[data-switch]'))
      box.checked = s.switches[box.dataset.switch] ?? false;
    renderCommandSelect();
  } else if (s.commands.length !== state.commandsLength) {
    renderCommandSelect();
  }
  state.commandsLength = s.commands.length;
  renderChannels();
}

// ------------------------------------------------------------------ composer

function currentCommand() {
  return state.commands.find((c) => c.name === $('#command').value);
}

function currentOptions() {
  const cmd = currentCommand();
  if (!cmd) return { sub: undefined, options: [] };
  const subs = (cmd.options ?? []).filter((o) => o.type === OPT.SUB);
  if (!subs.length) return { sub: undefined, options: cmd.options ?? [] };
  const sub = subs.find((s) => s.name === $('#subcommand').value) ?? subs[0];
  return { sub: sub.name, options: sub.options ?? [] };
}

function renderCommandSelect() {
  const select = $('#command');
  const keep = select.value;
  select.replaceChildren(...state.commands.map((c) => el('option', { value: c.name }, `/${c.name}`)));
  if (keep && state.commands.some((c) => c.name === keep)) select.value = keep;
  renderSubcommands();
}

function renderSubcommands() {
  const cmd = currentCommand();
  const subs = (cmd?.options ?? []).filter((o) => o.type === OPT.SUB);
  $('#sub-label').hidden = subs.length === 0;
  $('#subcommand').replaceChildren(...subs.map((s) => el('option', { value: s.name }, s.name)));
  renderOptions();
}

function renderOptions() {
  const { options } = currentOptions();
  const box = $('#options');
  box.replaceChildren(...options.map(optionInput));
  $('#drop').hidden = !options.some((o) => o.type === OPT.ATTACHMENT);
}

function optionInput(o) {
  const id = `opt-${o.name}`;
  let input;
  if (Array.isArray(o.choices) && o.choices.length) {
    input = el(
      'select',
      { id, name: o.name },
      el('option', { value: '' }, '—'),
      o.choices.map((c) => el('option', { value: String(c.value) }, c.name)),
    );
  } else if (o.type === OPT.BOOLEAN) {
    input = el(
      'select',
      { id, name: o.name },
      el('option', { value: '' }, '—'),
      el('option', { value: 'true' }, 'True'),
      el('option', { value: 'false' }, 'False'),
    );
  } else if (o.type === OPT.INTEGER || o.type === OPT.NUMBER) {
    input = el('input', {
      id,
      name: o.name,
      type: 'number',
      step: o.type === OPT.INTEGER ? '1' : 'any',
      min: o.min_value,
      max: o.max_value,
    });
  } else if (o.type === OPT.CHANNEL) {
    input = el(
      'select',
      { id, name: o.name },
      el('option', { value: '' }, '—'),
      state.channels
        .filter((c) => c.type === 0 || c.type === 5)
        .map((c) => el('option', { value: c.id }, `#${c.name}`)),
    );
  } else if (o.type === OPT.ATTACHMENT) {
    input = el('input', { id, name: o.name, type: 'file', accept: 'image/*' });
  } else {
    input = el('input', { id, name: o.name, type: 'text', maxlength: o.max_length, autocomplete: 'off' });
    if (o.autocomplete) {
      const list = el('datalist', { id: `${id}-list` });
      input.setAttribute('list', list.id);
      input.addEventListener('input', () => void autocomplete(o.name, list));
      input.addEventListener('focus', () => void autocomplete(o.name, list));
      return el(
        'label',
        { class: o.required ? 'required' : '' },
        el('span', { text: o.name }),
        input,
        list,
        el('small', { text: o.description }),
      );
    }
  }
  input.dataset.type = String(o.type);
  return el(
    'label',
    { class: o.required ? 'required' : '' },
    el('span', { text: o.name }),
    input,
    el('small', { text: o.description }),
  );
}

function optionValues() {
  const values = {};
  for (const input of $('#options').querySelectorAll('input,select')) {
    if (input.type === 'file' || input.value === '') continue;
    const type = Number(input.dataset.type ?? OPT.STRING);
    values[input.name] =
      type === OPT.BOOLEAN
        ? input.value === 'true'
        : type === OPT.INTEGER || type === OPT.NUMBER
          ? Number(input.value)
          : input.value;
  }
  return values;
}

async function autocomplete(name, list) {
  const { sub } = currentOptions();
  try {
    const r = await api('/api/autocomplete', {
      userId: state.userId,
      channelId: state.channelId,
      name: $('#command').value,
      subcommand: sub,
      options: { ...optionValues(), [name]: $(`#opt-${name}`).value },
      focused: name,
    });
    list.replaceChildren(...r.choices.map((c) => el('option', { value: String(c.value) }, c.name)));
  } catch {
    /* the bot may be restarting */
  }
}

const toBase64 = (file) =>
  new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(',')[1] ?? '');
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });

async function fileJson(file) {
  return {
    filename: file.name,
    contentType: file.type || 'application/octet-stream',
    base64: await toBase64(file),
  };
}

/** Dropped or picked photos go into the empty attachment options, in order. */
function fillAttachments(files) {
  const inputs = [...$('#options').querySelectorAll('input[type=file]')].filter((i) => !i.files?.length);
  let n = 0;
  for (const file of files) {
    const input = inputs[n++];
    if (!input) break;
    const dt = new DataTransfer();
    dt.items.add(file);
    input.files = dt.files;
  }
  status(
    `${Math.min(n, files.length)} photo(s) added${files.length > inputs.length ? `; ${files.length - inputs.length} did not fit (use /training-photos add)` : ''}`,
  );
}

const status = (text) => ($('#composer-status').textContent = text);

async function send(event) {
  event.preventDefault();
  const { sub, options } = currentOptions();
  const missing = options.filter(
    (o) => o.required && o.type !== OPT.ATTACHMENT && !$(`#opt-${o.name}`)?.value,
  );
  if (missing.length) return status(`Missing: ${missing.map((o) => o.name).join(', ')}`);
  const attachments = {};
  for (const input of $('#options').querySelectorAll('input[type=file]')) {
    if (input.files?.[0]) attachments[input.name] = await fileJson(input.files[0]);
  }
  status('Sending…');
  const r = await api('/api/command', {
    userId: state.userId,
    channelId: state.channelId,
    name: $('#command').value,
    subcommand: sub,
    options: optionValues(),
    attachments,
  });
  status(r.callbackType === null ? 'The bot did not answer within 3 s (is it restarting?)' : 'Sent.');
  if (r.modal) openModal(r.modal, undefined);
  renderOptions();
}

async function clickButton(messageId, customId, label, values) {
  status(`Clicked “${label ?? customId}”…`);
  const r = await api('/api/button', {
    userId: state.userId,
    channelId: state.channelId,
    messageId,
    customId,
    ...(values ? { values } : {}),
  });
  status(r.callbackType === null ? 'The bot did not answer within 3 s (is it restarting?)' : '');
  if (r.modal) openModal(r.modal, messageId);
}

// ------------------------------------------------------------------ modals

function modalFields(modal) {
  const out = [];
  for (const c of modal.components ?? []) {
    if (c.type === 18 && c.component) out.push({ label: c.label, ...c.component });
    else if (c.type === 1) for (const inner of c.components ?? []) out.push({ label: inner.label, ...inner });
  }
  return out;
}

function openModal(modal, messageId) {
  const dialog = $('#modal');
  $('#modal-title').textContent = modal.title ?? 'Form';
  const fields = modalFields(modal);
  $('#modal-fields').replaceChildren(
    ...fields.map((f) => {
      const input =
        f.type === 19
          ? el('input', {
              type: 'file',
              name: f.custom_id,
              multiple: (f.max_values ?? 1) > 1,
              accept: 'image/*',
              required: f.required ?? false,
            })
          : f.style === 2
            ? el('textarea', { name: f.custom_id, required: f.required ?? false, rows: 3 }, f.value ?? '')
            : el('input', {
                type: 'text',
                name: f.custom_id,
                required: f.required ?? false,
                value: f.value ?? '',
              });
      return el('label', {}, el('span', { text: f.label ?? f.custom_id }), input);
    }),
  );
  dialog.dataset.customId = modal.custom_id;
  dialog.dataset.messageId = messageId ?? '';
  dialog.showModal();
}

async function submitModal(event) {
  event.preventDefault();
  const dialog = $('#modal');
  const fields = [];
  for (const input of $('#modal-fields').querySelectorAll('input,textarea')) {
    if (input.type === 'file')
      fields.push({ customId: input.name, files: await Promise.all([...(input.files ?? [])].map(fileJson)) });
    else fields.push({ customId: input.name, value: input.value });
  }
  dialog.close();
  await api('/api/modal', {
    userId: state.userId,
    channelId: state.channelId,
    customId: dialog.dataset.customId,
    ...(dialog.dataset.messageId ? { messageId: dialog.dataset.messageId } : {}),
    fields,
  });
}

// ------------------------------------------------------------------ operator panel

async function loadTimeline() {
  const t = await api('/api/timeline');
  $('#count429').textContent = `· Discord 429s: ${t.count429}`;
  $('#timeline').replaceChildren(
    ...t.jobs.map((j) =>
      el(
        'div',
        { class: 'job' },
        el('b', { text: `${j.operation ?? 'job'} ${j.jobId.slice(0, 8)}` }),
        j.taskId ? ` · task ${j.taskId.slice(0, 12)}` : '',
        el(
          'ol',
          {},
          j.events.slice(-14).map((e) =>
            el('li', {
              class: `${e.kind}${/→ (4|5)\d\d|dropped/.test(e.detail) ? ' bad' : ''}`,
              text: `${new Date(e.at).toLocaleTimeString()} ${e.kind}: ${e.detail}`,
            }),
          ),
        ),
      ),
    ),
  );
  $('#notes').replaceChildren(
    ...t.notes.slice(-8).map((n) => el('li', { text: `${new Date(n.at).toLocaleTimeString()} ${n.detail}` })),
  );
}

async function loadMetrics() {
  try {
    const text = await api('/api/metrics');
    $('#metrics').textContent = text
      .split('\n')
      .filter((l) => l && !l.startsWith('#') && !/^(process|nodejs)_/.test(l))
      .join('\n');
  } catch (err) {
    $('#metrics').textContent = String(err.message ?? err);
  }
}

// ------------------------------------------------------------------ wiring

function wire() {
  $('#user').addEventListener('change', () => {
    state.userId = $('#user').value;
    void loadMessages();
  });
  $('#command').addEventListener('change', renderSubcommands);
  $('#subcommand').addEventListener('change', renderOptions);
  $('#composer').addEventListener('submit', (e) => void send(e).catch((err) => status(err.message)));
  $('#modal-form').addEventListener('submit', (e) => void submitModal(e).catch((err) => status(err.message)));
  $('#modal-cancel').addEventListener('click', () => $('#modal').close());
  $('#messages').addEventListener('click', (e) => {
    const target = e.target.closest('[data-channel]');
    if (target) {
      e.preventDefault();
      selectChannel(target.dataset.channel);
    }
  });
  const drop = $('#drop');
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    fillAttachments([...(e.dataTransfer?.files ?? [])]);
  });
  drop.addEventListener('click', () => $('#drop-input').click());
  drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') $('#drop-input').click();
  });
  $('#drop-input').addEventListener('change', (e) => fillAttachments([...(e.target.files ?? [])]));
  for (const box of document.querySelectorAll('[data-switch]')) {
    box.addEventListener('change', async () => {
      const r = await api('/api/switch', { name: box.dataset.switch, on: box.checked });
      if (!r.ok) {
        box.checked = false;
        alert(r.error);
      }
    });
  }
  $('#restart').addEventListener('click', () => void api('/api/switch', { name: 'restartBot' }));
  for (const [button, panel] of [
    ['#toggle-channels', '#channels'],
    ['#toggle-ops', '#ops'],
  ]) {
    $(button).addEventListener('click', () => {
      const open = $(panel).classList.toggle('open');
      $(button).setAttribute('aria-expanded', String(open));
    });
  }
  const events = new EventSource('/api/events');
  let timer;
  events.onmessage = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      void loadMessages();
      void loadState();
    }, 50);
  };
  setInterval(() => void loadTimeline().catch(() => undefined), 2000);
  setInterval(() => void loadMetrics(), 5000);
}

await loadState();
wire();
await loadMessages();
void loadTimeline();
void loadMetrics();
document.body.dataset.ready = 'true';
