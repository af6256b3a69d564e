// The playground page: a small Discord client over the playground server's /api (plain ES
// modules, no build step). The channel list, the messages of the open channel as the member
// picked in the user panel sees them (kept at the bottom while new ones arrive, unless they
// scrolled up), the message box with the `/` picker, modals, and the operator panel.

import { createComposer, fileJson, localized, offeredHere } from './composer.js';
import { closeMenu, openMenu, wireMenu } from './context-menu.js';
import { $, el, icon } from './dom.js';
import { renderForum, tagChip } from './forum.js';
import { setUiLocale, t, uiLocale } from './i18n.js';
import { refreshRelativeTimes } from './markdown.js';
import { renderMessage, renderPending, avatar } from './message.js';
import { createOps } from './ops.js';

const state = {
  guild: { id: '', name: '' },
  users: [],
  channels: [],
  commands: [],
  botId: '',
  applicationName: 'Media bot',
  discordOrigins: [],
  userId: '',
  channelId: '',
  messages: [],
  byId: new Map(),
  pending: [],
  failedComponents: new Set(),
  dismissed: new Set(),
  locales: [],
  guildLocale: 'en-US',
  forumTags: {},
  /** The open forum's posts, and the tags it is filtered by (ids). */
  forum: { tags: [], posts: [], now: Date.now() },
  forumFilter: new Set(),
};

async function api(path, body) {
  const res = await fetch(
    path,
    body === undefined
      ? {}
      : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  if (!res.ok) {
    const text = await res.text();
    let message = text;
    try {
      message = JSON.parse(text).error ?? JSON.parse(text).message ?? text;
    } catch {
      /* not JSON */
    }
    throw new Error(message);
  }
  const type = res.headers.get('content-type') ?? '';
  return type.includes('json') ? res.json() : res.text();
}

const channel = (id) => state.channels.find((c) => c.id === id);
/** Forum (15) and media (16) channels hold posts, not messages. */
const isForum = (c) => c?.type === 15 || c?.type === 16;
const tagNames = (post) =>
  (post?.appliedTags ?? []).map(
    (id) => (state.forumTags[post.parentId] ?? []).find((t) => t.id === id)?.name ?? id,
  );
const member = (id) => state.users.find((u) => u.id === id);
const me = () => member(state.userId);
const followed = () => new Set(me()?.followed ?? []);
/** Which channels exist and their names: a change redraws the messages that mention them. */
let channelsSig = '';
/** The member as a Discord user object (what avatars and names read). */
const asUser = (u) => (u ? { id: u.id, username: u.name, global_name: u.name } : undefined);

/** Message links: https://discord.com/channels/guild/channel[/message], and the local Discord's own. */
function jumpTarget(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const origins = new Set([...state.discordOrigins, location.origin]);
  const discordHost = /^(?:(?:ptb|canary)\.)?discord(?:app)?\.com$/.test(u.hostname);
  if (!discordHost && !origins.has(u.origin)) return null;
  const m = /^\/channels\/(\d+|@me)\/(\d+)(?:\/(\d+))?\/?$/.exec(u.pathname);
  return m ? { channelId: m[2], ...(m[3] ? { messageId: m[3] } : {}) } : null;
}

const ctx = {
  get botId() {
    return state.botId;
  },
  get applicationName() {
    return state.applicationName;
  },
  md: {
    userName: (id) => member(id)?.name ?? (id === state.botId ? state.applicationName : 'unknown-user'),
    channelName: (id) => channel(id)?.name,
    jumpTarget,
  },
  lookup: (id) => state.byId.get(id),
  me: () => asUser(me()),
  get failedComponents() {
    return state.failedComponents;
  },
  onButton: (msg, b) => void interact(msg.id, b.custom_id, b.label),
  onSelect: (msg, s, values) => void interact(msg.id, s.custom_id, s.placeholder, values),
  onDismiss: (id) => {
    state.dismissed.add(id);
    render();
  },
  onMenu: (item, at) => openMessageMenu(item, at),
};

const status = (text, bad = false) => {
  $('#composer-status').textContent = text;
  $('#composer-status').classList.toggle('bad', bad);
};

// ------------------------------------------------------------------ the message list

const scroller = () => $('#messages');
const list = () => $('#message-list');
/** Follow new messages while the member is at the bottom; stay put once they scrolled up. */
let stick = true;
let unseen = false;
const nodes = new Map();

const distanceFromBottom = () => {
  const s = scroller();
  return s.scrollHeight - s.scrollTop - s.clientHeight;
};

function toBottom() {
  scroller().scrollTop = scroller().scrollHeight;
  stick = true;
  unseen = false;
  paintJumpBar();
}

function paintJumpBar() {
  const far = distanceFromBottom() > scroller().clientHeight / 2;
  const bar = $('#jump-present');
  bar.hidden = stick || !(far || unseen);
  $('#jump-present-text').textContent = unseen ? t('newBelow') : t('older');
  $('#jump-present-button').textContent = t('jumpPresent');
}

const SEVEN_MINUTES = 7 * 60_000;
/** Whether a message continues the one before it (same author, close in time, no header of its own). */
function continues(prev, msg) {
  if (!prev || prev.kind !== 'message' || msg.kind !== 'message') return false;
  const a = prev.item.data;
  const b = msg.item.data;
  if (b.interaction_metadata || b.type === 19 || prev.item.ephemeral || msg.item.ephemeral) return false;
  return a.author?.id === b.author?.id && Date.parse(b.timestamp) - Date.parse(a.timestamp) < SEVEN_MINUTES;
}

const byId = (a, b) => {
  const x = BigInt(a.id);
  const y = BigInt(b.id);
  return x < y ? -1 : x > y ? 1 : 0;
};

function welcome() {
  const c = channel(state.channelId);
  const thread = c && (c.type === 10 || c.type === 11 || c.type === 12);
  const post = thread && isForum(channel(c.parentId));
  return el(
    'div',
    { class: 'channel-welcome', 'data-welcome': state.channelId },
    post ? null : el('div', { class: 'welcome-icon' }, icon(thread ? 'chat' : 'hash', 40)),
    el('h2', { text: thread ? c.name : t('welcome', { channel: c?.name ?? '' }) }),
    post ? el('div', { class: 'forum-tags' }, ...tagNames(c).map(tagChip)) : null,
    el('p', {
      text: post
        ? t('postIn', { channel: channel(c.parentId)?.name ?? '' })
        : thread
          ? t('threadStart')
          : t('channelStart', { channel: c?.name ?? '' }),
    }),
    thread
      ? null
      : el(
          'p',
          { class: 'welcome-hint' },
          'Type ',
          el('kbd', { text: '/' }),
          ' in the message box to run a command: try ',
          el('code', { text: '/extend-song' }),
          ' with task_id ',
          el('code', { text: 'song-parent-0001' }),
          ', or ',
          el('code', { text: '/upscale' }),
          ' with an image. Or post an image (',
          el('kbd', { text: '+' }),
          ' or drop it here) and right-click it: Apps → ',
          el('code', { text: 'Upscale image' }),
          '.',
        ),
  );
}

/** Redraws what changed, keeps what did not (and any message whose audio or video is playing). */
function render() {
  const items = [
    ...state.messages
      .filter((m) => !state.dismissed.has(m.id))
      .map((item) => ({ kind: 'message', id: item.id, item })),
    ...state.pending.map((p) => ({ kind: 'pending', id: p.id, item: p })),
  ].sort(byId);
  const box = list();
  const wanted = [];
  const first = box.firstElementChild;
  const welcomeKey = `${state.channelId}:${uiLocale()}`;
  if (first?.dataset.welcomeKey !== welcomeKey) {
    const w = welcome();
    w.dataset.welcomeKey = welcomeKey;
    if (first?.dataset.welcome !== undefined) first.replaceWith(w);
    else box.prepend(w);
  }
  wanted.push(box.firstElementChild);
  let prev;
  for (const it of items) {
    const grouped = continues(prev, it);
    prev = it;
    const key = `${it.kind}:${it.id}`;
    const sig = JSON.stringify([
      it.item,
      grouped,
      it.kind === 'message' && state.failedComponents.has(it.id),
      state.users.length,
      // Mentions of channels and threads resolve on render: a thread made after the message drew
      // (or renamed) redraws it, instead of "#unknown" until the channel is switched.
      channelsSig,
      uiLocale(),
    ]);
    const old = nodes.get(key);
    let node = old?.node;
    const playing = node && [...node.querySelectorAll('audio,video')].some((m) => !m.paused);
    if (!old || (old.sig !== sig && !playing)) {
      node = it.kind === 'message' ? renderMessage(it.item, ctx, grouped) : renderPending(it.item, ctx);
      if (old?.node.classList.contains('highlight')) node.classList.add('highlight');
      nodes.set(key, { sig, node });
      old?.node.replaceWith(node);
    }
    wanted.push(node);
  }
  const keep = new Set(wanted);
  for (const [key, { node }] of nodes)
    if (!keep.has(node)) {
      node.remove();
      nodes.delete(key);
    }
  // Place in order, moving only what is out of place (moving a playing player would pause it).
  wanted.forEach((node, i) => {
    if (box.children[i] !== node) box.insertBefore(node, box.children[i] ?? null);
  });
  if (stick) toBottom();
  paintJumpBar();
}

let loading = false;
let again = false;
let deadlineTimer;
async function loadMessages() {
  if (!state.channelId) return;
  if (isForum(channel(state.channelId))) return loadForum();
  if (loading) {
    again = true;
    return;
  }
  loading = true;
  const channelId = state.channelId;
  try {
    const r = await api(`/api/messages?channelId=${channelId}&userId=${state.userId}`);
    if (channelId !== state.channelId) return;
    const known = new Set(state.messages.map((m) => m.id));
    if (!stick && r.messages.some((m) => !known.has(m.id))) unseen = true;
    state.messages = r.messages;
    state.byId = new Map(r.messages.map((m) => [m.id, m]));
    state.pending = r.pending;
    state.failedComponents = new Set(r.failedComponents.map((f) => f.messageId));
    // Look again when the oldest unanswered command passes Discord's 3 s.
    clearTimeout(deadlineTimer);
    const waits = r.pending.filter((p) => !p.failed).map((p) => r.ackDeadlineMs - (r.now - p.createdAt) + 60);
    if (waits.length) deadlineTimer = setTimeout(() => void loadMessages(), Math.max(50, Math.min(...waits)));
    render();
  } finally {
    loading = false;
    if (again) {
      again = false;
      void loadMessages();
    }
  }
}

// ------------------------------------------------------------------ forum and media channels

function renderForumView() {
  $('#forum').replaceChildren(
    renderForum(
      { channel: channel(state.channelId), ...state.forum, filter: state.forumFilter },
      {
        open: (id) => void selectChannel(id),
        toggleTag: (id) => {
          if (!state.forumFilter.delete(id)) state.forumFilter.add(id);
          renderForumView();
        },
        md: ctx.md,
        author: (data) => ctx.md.userName(data.author.id),
      },
    ),
  );
}

async function loadForum() {
  const channelId = state.channelId;
  const r = await api(`/api/forum?channelId=${channelId}`);
  if (channelId !== state.channelId) return;
  state.forum = r;
  renderForumView();
}

// ------------------------------------------------------------------ jumping, interactions

function highlight(messageId) {
  const node = list().querySelector(`[data-id="${CSS.escape(messageId)}"]`);
  if (!node) return false;
  stick = false;
  node.scrollIntoView({ block: 'center' });
  node.classList.remove('highlight');
  void node.offsetWidth; // restart the animation
  node.classList.add('highlight');
  setTimeout(() => node.classList.remove('highlight'), 2500);
  paintJumpBar();
  return true;
}

async function jumpTo(channelId, messageId) {
  if (!channel(channelId)) {
    status('That channel is not in this server.', true);
    return;
  }
  if (channelId !== state.channelId) await selectChannel(channelId);
  if (!messageId) return;
  // A channel just switched to may still be loading (a load already under way finishes first).
  for (let tries = 0; tries < 20; tries++) {
    if (highlight(messageId)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  status('That message is no longer there.', true);
}

async function interact(messageId, customId, label, values) {
  status('');
  const r = await api('/api/button', {
    userId: state.userId,
    channelId: state.channelId,
    messageId,
    customId,
    ...(values ? { values } : {}),
  }).catch((err) => status(err.message, true));
  if (r?.modal) openModal(r.modal, messageId);
  void loadMessages();
}

// ------------------------------------------------------------------ channels, member

// ------------------------------------------------------------------ a message's menu (Apps)

/** The message commands (type 3) Discord offers this member here, named in their language. */
function messageCommands() {
  const here = channel(state.channelId);
  return state.commands
    .filter((c) => c.type === 3 && offeredHere(c, here, me()?.permissions))
    .map((c) => ({ name: c.name, label: localized(c, 'name', me()?.locale ?? 'en-US') ?? c.name }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

function openMessageMenu(item, at) {
  const link = `https://discord.com/channels/${channel(state.channelId)?.guildId ?? '@me'}/${state.channelId}/${item.id}`;
  openMenu(at, {
    apps: messageCommands().map((c) => ({
      ...c,
      app: state.applicationName,
      run: () => void runMessageCommand(c.name, item.id),
    })),
    copy: [
      { label: t('copyLink'), run: () => void navigator.clipboard?.writeText(link).catch(() => undefined) },
      { label: t('copyId'), run: () => void navigator.clipboard?.writeText(item.id).catch(() => undefined) },
    ],
  });
}

async function runMessageCommand(name, messageId) {
  status('');
  const r = await api('/api/message-command', {
    userId: state.userId,
    channelId: state.channelId,
    name,
    messageId,
  }).catch((err) => status(err.message, true));
  toBottom();
  if (r?.modal) openModal(r.modal, undefined);
  void loadMessages();
}

const TOP_LEVEL = new Set([0, 1, 5, 15, 16]);
const THREADS = new Set([10, 11, 12]);
const CHANNEL_ICON = { 0: 'hash', 1: 'chat', 5: 'megaphone', 15: 'forum', 16: 'forum' };

function renderChannels() {
  // A DM is the open member's own (each member has theirs with the bot).
  const top = state.channels.filter(
    (c) => TOP_LEVEL.has(c.type) && (c.type !== 1 || c.dmOf === state.userId),
  );
  const row = (c) =>
    el(
      'button',
      {
        type: 'button',
        class: 'channel',
        'aria-current': c.id === state.channelId ? 'true' : 'false',
        'data-channel': c.id,
        onclick: () => void selectChannel(c.id),
      },
      icon(CHANNEL_ICON[c.type] ?? 'hash', 20),
      el('span', { text: c.name }),
    );
  const threadRow = (t) =>
    el(
      'button',
      {
        type: 'button',
        class: 'thread',
        'aria-current': t.id === state.channelId ? 'true' : 'false',
        'data-channel': t.id,
        onclick: () => void selectChannel(t.id),
      },
      el('span', { class: 'spine', 'aria-hidden': 'true' }),
      el('span', { text: t.name }),
    );
  // Grouped by place: the server, the server without the bot (user install), the DMs.
  const categories = [...new Set(top.map((c) => c.category ?? 'Text channels'))];
  $('#channel-list').replaceChildren(
    ...categories.flatMap((category) => [
      el('div', { class: 'category', text: category }),
      ...top
        .filter((c) => (c.category ?? 'Text channels') === category)
        .flatMap((c) => [
          row(c),
          // Only the threads and posts the member follows (and the one open), as Discord's sidebar.
          ...state.channels
            .filter(
              (th) =>
                th.parentId === c.id &&
                THREADS.has(th.type) &&
                (followed().has(th.id) || th.id === state.channelId),
            )
            .map(threadRow),
        ]),
    ]),
  );
  const c = channel(state.channelId);
  const parent = c?.parentId ? channel(c.parentId) : undefined;
  $('#channel-title').replaceChildren(
    icon(THREADS.has(c?.type) ? 'chat' : (CHANNEL_ICON[c?.type] ?? 'hash'), 22),
    parent ? el('span', { class: 'muted', text: `${parent.name} › ` }) : '',
    el('span', { text: c?.name ?? '' }),
  );
  document.title = `#${c?.name ?? ''} · ${state.guild.name} · playground`;
}

function renderUserPanel() {
  const u = me();
  $('#user-avatar').replaceChildren(avatar(asUser(u), 'medium'));
  const perms = BigInt(u?.permissions ?? '0');
  $('#user-perms').textContent = u?.admin
    ? 'Manage Server'
    : perms & MANAGE_MESSAGES
      ? 'Manage Messages'
      : 'Member';
  renderLocale();
}

/** The member's Discord language: what their interactions carry as `locale`. */
function renderLocale() {
  const select = $('#locale');
  if (select.options.length !== state.locales.length)
    select.replaceChildren(...state.locales.map((l) => el('option', { value: l.code, text: l.name })));
  select.value = me()?.locale ?? 'en-US';
}

const MANAGE_MESSAGES = 1n << 13n;

/** The member's language for the client's own words; a change redraws what is shown. */
function applyUiLocale() {
  const before = uiLocale();
  setUiLocale(me()?.locale ?? 'en-US');
  if (uiLocale() === before) return false;
  paintJumpBar();
  return true;
}

async function setLocale(body) {
  await api('/api/locale', body).catch((err) => status(err.message, true));
  await loadState();
  composer.refresh();
}

async function selectChannel(id) {
  state.channelId = id;
  state.messages = [];
  state.pending = [];
  for (const { node } of nodes.values()) node.remove();
  nodes.clear();
  stick = true;
  unseen = false;
  const forum = isForum(channel(id));
  state.forum = { tags: [], posts: [], now: Date.now() };
  state.forumFilter.clear();
  document.body.classList.toggle('forum-open', forum);
  $('#forum').hidden = !forum;
  $('#forum').replaceChildren();
  renderChannels();
  composer.refresh();
  document.body.classList.remove('show-channels');
  await loadMessages();
}

let commandsSig = '';
async function loadState() {
  const s = await api('/api/state');
  const first = !state.botId;
  Object.assign(state, {
    guild: s.guild,
    users: s.users,
    channels: s.channels,
    commands: s.commands,
    botId: s.botId,
    applicationName: s.applicationName,
    discordOrigins: s.discordOrigins,
    locales: s.locales,
    guildLocale: s.guildLocale,
    forumTags: s.forumTags,
  });
  if (first) {
    state.userId = s.users[0].id;
    state.channelId = s.channels.find((c) => c.name === 'general')?.id ?? s.channels[0].id;
    $('#guild-name').textContent = s.guild.name;
    $('#user').replaceChildren(...s.users.map((u) => el('option', { value: u.id, text: u.name })));
    ops.show(s);
    $('#guild-locale').replaceChildren(
      ...s.locales.map((l) => el('option', { value: l.code, text: `${l.name} (${l.code})` })),
    );
    renderUserPanel();
  }
  $('#guild-locale').value = s.guildLocale;
  renderLocale();
  const sig = JSON.stringify(s.channels.map((c) => [c.id, c.name, c.type]));
  const redraw = applyUiLocale() || (sig !== channelsSig && channelsSig !== '');
  channelsSig = sig;
  const commands = JSON.stringify(s.commands);
  if (commands !== commandsSig) {
    commandsSig = commands;
    composer.refresh();
  }
  renderChannels();
  if (redraw && !isForum(channel(state.channelId))) render();
}

// ------------------------------------------------------------------ modals

function modalFields(modal) {
  const out = [];
  for (const c of modal.components ?? []) {
    if (c.type === 18 && c.component)
      out.push({ label: c.label, description: c.description, ...c.component });
    else if (c.type === 1) for (const inner of c.components ?? []) out.push({ label: inner.label, ...inner });
  }
  return out;
}

function openModal(modal, messageId) {
  const dialog = $('#modal');
  $('#modal-title').textContent = modal.title ?? 'Form';
  $('#modal-fields').replaceChildren(
    ...modalFields(modal).map((f) => {
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
            ? el(
                'textarea',
                { name: f.custom_id, required: f.required ?? false, rows: 3, placeholder: f.placeholder },
                f.value ?? '',
              )
            : el('input', {
                type: 'text',
                name: f.custom_id,
                required: f.required ?? false,
                value: f.value ?? '',
                placeholder: f.placeholder,
              });
      return el(
        'label',
        {},
        el(
          'span',
          { class: 'modal-label', text: f.label ?? f.custom_id },
          f.required ? el('span', { class: 'req', text: ' *' }) : null,
        ),
        f.description ? el('small', { text: f.description }) : null,
        input,
      );
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
  void loadMessages();
}

// ------------------------------------------------------------------ wiring

const ops = createOps({ api });
const composer = createComposer({
  context: () => ({
    userId: state.userId,
    channelId: state.channelId,
    channelName: channel(state.channelId)?.name,
    commands: state.commands,
    channels: state.channels,
    users: state.users,
    me: me(),
    locale: me()?.locale ?? 'en-US',
    applicationName: state.applicationName,
  }),
  api,
  sent: (result) => {
    toBottom();
    void loadMessages();
    if (result?.modal) openModal(result.modal, undefined);
  },
});

function wire() {
  $('#toggle-channels').append(icon('menu', 22));
  $('#toggle-ops').prepend(icon('gear', 20));
  $('#user').addEventListener('change', () => {
    state.userId = $('#user').value;
    closeMenu();
    applyUiLocale();
    renderUserPanel();
    renderChannels();
    composer.refresh();
    for (const { node } of nodes.values()) node.remove();
    nodes.clear();
    stick = true;
    void loadMessages();
  });
  $('#locale').addEventListener(
    'change',
    () => void setLocale({ userId: state.userId, locale: $('#locale').value }),
  );
  $('#guild-locale').addEventListener('change', () => void setLocale({ locale: $('#guild-locale').value }));
  $('#modal-form').addEventListener(
    'submit',
    (e) => void submitModal(e).catch((err) => status(err.message, true)),
  );
  $('#modal-cancel').addEventListener('click', () => $('#modal').close());
  // Mentions, message links and reply headers move inside the page.
  $('#messages').addEventListener('click', (e) => {
    const target = e.target.closest('[data-jump-channel]');
    if (!target) return;
    e.preventDefault();
    void jumpTo(target.dataset.jumpChannel, target.dataset.jumpMessage);
  });
  $('#messages').addEventListener('scroll', () => {
    stick = distanceFromBottom() < 24;
    if (stick) unseen = false;
    paintJumpBar();
  });
  // Images load and progress bars grow after a render: stay at the bottom while following.
  new ResizeObserver(() => stick && toBottom()).observe(list());
  // A message kept while its media played is redrawn once it stops.
  $('#messages').addEventListener('pause', () => render(), true);
  $('#jump-present-button').addEventListener('click', () => toBottom());
  // Right-click on a message: its menu (Apps: the message commands), as in Discord.
  wireMenu();
  list().addEventListener('contextmenu', (e) => {
    const article = e.target.closest('article.msg[data-id]');
    const item = article && state.byId.get(article.dataset.id);
    if (!item || item.ephemeral) return;
    e.preventDefault();
    openMessageMenu(item, { x: e.clientX, y: e.clientY });
  });

  // Files dropped anywhere on the channel go to the command's file options, or with no command to
  // the member's next message.
  const chat = $('#chat');
  const overlay = $('#drop-overlay');
  let depth = 0;
  const hasFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
  chat.addEventListener('dragenter', (e) => {
    if (!hasFiles(e)) return;
    depth++;
    $('#drop-target').textContent = composer.mode
      ? `/${composer.mode}`
      : `#${channel(state.channelId)?.name ?? ''}`;
    $('#drop-hint').textContent = composer.mode
      ? "Files fill the command's file options."
      : 'Files are attached to your message: add a comment if you like, then press Enter.';
    overlay.hidden = false;
  });
  chat.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) overlay.hidden = true;
  });
  chat.addEventListener('dragover', (e) => e.preventDefault());
  chat.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    overlay.hidden = true;
    composer.addFiles([...(e.dataTransfer?.files ?? [])]);
  });

  $('#toggle-channels').addEventListener('click', () => {
    const open = document.body.classList.toggle('show-channels');
    $('#toggle-channels').setAttribute('aria-expanded', String(open));
  });
  // The operator panel sits beside the channel on wide screens (hide it to give the channel room)
  // and over it on narrow ones.
  $('#toggle-ops').addEventListener('click', () => {
    const wide = matchMedia('(min-width: 1100px)').matches;
    const shown = wide
      ? !document.body.classList.toggle('hide-ops')
      : document.body.classList.toggle('show-ops');
    $('#toggle-ops').setAttribute('aria-expanded', String(shown));
  });

  const events = new EventSource('/api/events');
  let timer;
  events.onmessage = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      void loadMessages();
      void loadState();
    }, 50);
  };
  setInterval(() => refreshRelativeTimes(list()), 30_000);
}

await loadState();
wire();
await loadMessages();
document.body.dataset.ready = 'true';
