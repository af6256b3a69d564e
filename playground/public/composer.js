// The message box, as in Discord: one line. Typing `/` opens a picker of the commands (and
// subcommands) this member may use, filtered as they type; picking one turns the line into the
// command followed by a chip per option (required ones first, optional ones added from the
// picker). A focused option shows its description and its choices or the bot's autocomplete
// suggestions above the line. Files come from the + button or are dropped on the channel: they fill
// the picked command's file options, or, with no command, are attached to the member's own message
// (shown above the line, as Discord's upload previews). Enter sends; a plain line (no `/`), files or
// both are posted as the member's message.

import { $, el, emojify, icon } from './dom.js';
import { t } from './i18n.js';

export const OPT = {
  SUB: 1,
  GROUP: 2,
  STRING: 3,
  INTEGER: 4,
  BOOLEAN: 5,
  USER: 6,
  CHANNEL: 7,
  ROLE: 8,
  MENTIONABLE: 9,
  NUMBER: 10,
  ATTACHMENT: 11,
};
const ADMINISTRATOR = 1n << 3n;
/** Discord's most files on one message. */
const MAX_UPLOADS = 10;

/**
 * Whether a member is shown a command: `default_member_permissions` null shows it to everyone;
 * otherwise the member needs every one of its bits, or Administrator ("0": administrators only).
 */
export function memberSees(command, permissions) {
  const required = command.default_member_permissions;
  if (required === null || required === undefined) return true;
  let have = 0n;
  try {
    have = BigInt(permissions ?? '0');
  } catch {
    /* no permissions */
  }
  if (have & ADMINISTRATOR) return true;
  const need = BigInt(required);
  return need !== 0n && (have & need) === need;
}

/**
 * Whether Discord offers a command to a member in a channel (`here`: the page's channel, with its
 * `guildId`, `type` and `ownInstall`, true where the bot is not and only the member's own install
 * reaches): a server's own commands only in that server; where the bot is not (a server that never
 * installed it, a DM) only what the member's install brings (`integration_types` with 1); only where
 * its `contexts` include the place (0 a server, 1 the DM with the bot); and where the server installed
 * the bot only if the member's permissions allow it (that server's command permissions apply).
 */
export function offeredHere(command, here, permissions) {
  const own = here?.ownInstall === true;
  const context = here?.type === 1 ? 1 : 0;
  if (Array.isArray(command.contexts) && !command.contexts.includes(context)) return false;
  if (command.guild_id) {
    if (own || command.guild_id !== here?.guildId) return false;
  } else {
    const installs = own ? [1] : [0, 1];
    if (!(command.integration_types ?? [0]).some((t) => installs.includes(t))) return false;
  }
  return own || memberSees(command, permissions);
}

/**
 * A name or description in the member's Discord language, as Discord's client shows it: the
 * `*_localizations` entry for their locale, else the base text. What is sent stays canonical.
 */
export function localized(obj, field, locale) {
  return obj?.[`${field}_localizations`]?.[locale] ?? obj?.[field];
}

/**
 * What the picker lists: each command without subcommands, and each "command subcommand",
 * named and described in `locale` (`name`, `sub` and `group` stay the canonical names).
 */
export function commandEntries(commands, locale = 'en-US') {
  const out = [];
  const n = (o) => localized(o, 'name', locale);
  const d = (o) => localized(o, 'description', locale);
  for (const c of commands) {
    if ((c.type ?? 1) !== 1) continue;
    const subs = (c.options ?? []).filter((o) => o.type === OPT.SUB || o.type === OPT.GROUP);
    if (!subs.length) {
      out.push({
        command: c,
        name: c.name,
        label: n(c),
        description: d(c),
        options: c.options ?? [],
      });
      continue;
    }
    for (const s of subs) {
      if (s.type === OPT.SUB)
        out.push({
          command: c,
          name: c.name,
          sub: s.name,
          label: `${n(c)} ${n(s)}`,
          description: d(s),
          options: s.options ?? [],
        });
      else
        for (const g of s.options ?? [])
          out.push({
            command: c,
            name: c.name,
            group: s.name,
            sub: g.name,
            label: `${n(c)} ${n(s)} ${n(g)}`,
            description: d(g),
            options: g.options ?? [],
          });
    }
  }
  return out;
}

/** Entries matching what follows the `/`: names starting with it first, then names containing it. */
export function matchEntries(entries, query) {
  const q = query.trim().toLowerCase();
  const starts = [];
  const contains = [];
  for (const e of entries) {
    const label = e.label.toLowerCase();
    if (label.startsWith(q)) starts.push(e);
    else if (q && label.includes(q)) contains.push(e);
  }
  const byLabel = (a, b) => a.label.localeCompare(b.label);
  return [...starts.sort(byLabel), ...contains.sort(byLabel)];
}

const toBase64 = (file) =>
  new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(',')[1] ?? '');
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });

export async function fileJson(file) {
  return {
    filename: file.name,
    contentType: file.type || 'application/octet-stream',
    base64: await toBase64(file),
  };
}

/**
 * @param hooks {
 *   context(): { userId, channelId, channelName, commands, channels, users, applicationName },
 *   api(path, body): Promise<any>,
 *   sent(result): void,      // after a command or message went out (refresh, open a modal…)
 * }
 */
export function createComposer(hooks) {
  const form = $('#composer');
  const entryBox = $('#entry');
  const picker = $('#picker');
  const pickerHead = $('#picker-head');
  const pickerList = $('#picker-list');
  const fileInput = $('#file-input');
  const statusLine = $('#composer-status');
  const uploadsBox = $('#uploads');
  const text = el('input', {
    id: 'text',
    class: 'text',
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-label': 'Message, or / for commands',
    'aria-controls': 'picker-list',
    'aria-autocomplete': 'list',
  });

  /** The picked command (null: a plain message), its option chips, the picker's items. */
  const S = {
    entry: null,
    chips: [],
    focus: null,
    items: [],
    active: 0,
    hidden: false,
    ac: new Map(),
    acLoading: null,
    acSeq: 0,
    acTimer: undefined,
    fileTarget: null,
    /** Files attached to the member's next plain message: { file, url } (url: an image's preview). */
    uploads: [],
  };

  /** An option's description in the member's language. */
  const describe = (opt) => localized(opt, 'description', hooks.context().locale);

  const status = (msg, bad = false) => {
    statusLine.textContent = msg;
    statusLine.classList.toggle('bad', bad);
  };

  // ---------------------------------------------------------------- the line

  function placeholder() {
    text.placeholder = S.entry ? '' : t('placeholder', { channel: hooks.context().channelName ?? '' });
  }

  function renderEntry() {
    entryBox.replaceChildren(
      ...(S.entry
        ? [el('span', { class: 'cmd-chip', text: `/${S.entry.label}` }), ...S.chips.map((c) => c.node)]
        : []),
      text,
    );
    form.classList.toggle('command-mode', Boolean(S.entry));
    placeholder();
  }

  const sizeInput = (input) => (input.style.width = `${Math.max(2, input.value.length + 1)}ch`);
  const chipFor = (name) => S.chips.find((c) => c.opt.name === name);

  function makeChip(opt) {
    const chip = { opt, file: null, picked: undefined };
    if (opt.type === OPT.ATTACHMENT) {
      chip.input = el('button', {
        type: 'button',
        class: 'opt-file',
        'data-option': opt.name,
        'aria-label': `${opt.name}: ${describe(opt)}`,
        text: 'choose a file',
        onclick: () => {
          S.fileTarget = chip;
          fileInput.click();
        },
      });
    } else {
      chip.input = el('input', {
        class: 'opt-value',
        type: 'text',
        'data-option': opt.name,
        autocomplete: 'off',
        spellcheck: 'false',
        'aria-label': `${opt.name}: ${describe(opt)}`,
      });
      sizeInput(chip.input);
      chip.input.addEventListener('input', () => {
        chip.picked = undefined;
        chip.node.classList.remove('invalid');
        sizeInput(chip.input);
        S.hidden = false;
        if (opt.autocomplete) requestAutocomplete(chip);
        renderPicker();
      });
    }
    chip.input.addEventListener('focus', () => {
      S.focus = chip;
      S.active = 0;
      S.hidden = false;
      if (opt.autocomplete) requestAutocomplete(chip);
      renderPicker();
    });
    chip.node = el(
      'span',
      {
        class: `opt-chip${opt.required ? ' required' : ''}`,
        'data-option': opt.name,
        // Clicking the chip's name edits its value, as in Discord.
        onclick: (e) => e.target !== chip.input && chip.input.focus(),
      },
      el('span', { class: 'opt-name', text: opt.name }),
      chip.input,
    );
    return chip;
  }

  function addChip(opt, focus = true) {
    let chip = chipFor(opt.name);
    if (!chip) {
      chip = makeChip(opt);
      // Chips keep the command's option order.
      const order = S.entry.options.map((o) => o.name);
      S.chips.push(chip);
      S.chips.sort((a, b) => order.indexOf(a.opt.name) - order.indexOf(b.opt.name));
      renderEntry();
    }
    if (focus) chip.input.focus();
    return chip;
  }

  function removeChip(chip) {
    S.chips = S.chips.filter((c) => c !== chip);
    S.ac.delete(chip.opt.name);
    renderEntry();
  }

  function startCommand(entry) {
    S.entry = entry;
    S.chips = [];
    S.ac.clear();
    text.value = '';
    status('');
    for (const o of entry.options) if (o.required) S.chips.push(makeChip(o));
    renderEntry();
    const first = S.chips[0];
    S.active = first ? 0 : -1;
    if (first) first.input.focus();
    else text.focus();
    S.focus = first ?? 'rest';
    renderPicker();
  }

  function reset() {
    S.entry = null;
    S.chips = [];
    S.ac.clear();
    S.focus = 'text';
    text.value = '';
    renderEntry();
    hidePicker();
  }

  function setChipValue(chip, shown, value) {
    chip.input.value = shown;
    chip.picked = value;
    chip.node.classList.remove('invalid');
    sizeInput(chip.input);
    // On to the next empty option, else the end of the line.
    const next = S.chips.find((c) => c !== chip && c.opt.type !== OPT.ATTACHMENT && c.input.value === '');
    (next?.input ?? text).focus();
    if (!next) {
      S.focus = 'rest';
      S.active = -1;
      renderPicker();
    }
  }

  function setFile(chip, file) {
    chip.file = file;
    chip.input.textContent = file.name;
    chip.node.classList.add('filled');
    chip.node.classList.remove('invalid');
  }

  // ---------------------------------------------------------------- a plain message's files

  function renderUploads() {
    uploadsBox.replaceChildren(
      ...S.uploads.map((u) =>
        el(
          'div',
          { class: 'upload', 'data-filename': u.file.name },
          u.url
            ? el('img', { class: 'upload-preview', src: u.url, alt: '' })
            : el('div', { class: 'upload-preview file' }, icon('file', 48)),
          el('span', { class: 'upload-name', text: u.file.name }),
          el('button', {
            type: 'button',
            class: 'upload-remove',
            'aria-label': `${t('removeAttachment')}: ${u.file.name}`,
            title: t('removeAttachment'),
            text: '×',
            onclick: () => {
              removeUpload(u);
              text.focus();
            },
          }),
        ),
      ),
    );
    uploadsBox.hidden = S.uploads.length === 0;
  }

  function removeUpload(u) {
    if (u.url) URL.revokeObjectURL(u.url);
    S.uploads = S.uploads.filter((x) => x !== u);
    renderUploads();
  }

  /** With no command picked, files are attached to the member's next message (up to 10, as Discord). */
  function attachToMessage(files) {
    const room = Math.max(0, MAX_UPLOADS - S.uploads.length);
    for (const file of files.slice(0, room))
      S.uploads.push({ file, url: file.type.startsWith('image/') ? URL.createObjectURL(file) : null });
    renderUploads();
    status(
      files.length > room
        ? `${files.length - room} file(s) left out: a message holds ${MAX_UPLOADS} at most`
        : '',
      files.length > room,
    );
    text.focus();
  }

  /** Dropped or picked files fill the command's empty file options in order, adding optional ones. */
  function addFiles(files) {
    if (!files.length) return;
    if (!S.entry) {
      attachToMessage(files);
      return;
    }
    const fileOptions = S.entry.options.filter((o) => o.type === OPT.ATTACHMENT);
    if (!fileOptions.length) {
      status(`/${S.entry.label} takes no files`, true);
      return;
    }
    const queue = [...files];
    let placed = 0;
    if (S.fileTarget) {
      setFile(S.fileTarget, queue.shift());
      placed++;
      S.fileTarget = null;
    }
    for (const opt of fileOptions) {
      if (!queue.length) break;
      const chip = chipFor(opt.name) ?? addChip(opt, false);
      if (chip.file) continue;
      setFile(chip, queue.shift());
      placed++;
    }
    status(
      `${placed} file(s) added${queue.length ? `; ${queue.length} did not fit (/${S.entry.label} takes ${fileOptions.length})` : ''}`,
    );
    text.focus();
  }

  // ---------------------------------------------------------------- the picker

  function hidePicker() {
    picker.hidden = true;
    S.items = [];
  }

  function pickerItem(item, i) {
    return el(
      'div',
      {
        class: `picker-item${i === S.active ? ' active' : ''}`,
        role: 'option',
        id: `picker-item-${i}`,
        'aria-selected': i === S.active ? 'true' : 'false',
        onmousedown: (e) => e.preventDefault(), // keep the focus in the line
        onclick: () => item.pick(),
        onmousemove: () => {
          if (S.active !== i) {
            S.active = i;
            paintActive();
          }
        },
      },
      item.icon ?? null,
      el('span', { class: 'picker-label', text: item.label }),
      item.description ? el('span', { class: 'picker-desc', text: item.description }) : null,
      item.aside ? el('span', { class: 'picker-aside', text: item.aside }) : null,
    );
  }

  function paintActive() {
    pickerList.querySelectorAll('.picker-item').forEach((n, i) => {
      n.classList.toggle('active', i === S.active);
      n.setAttribute('aria-selected', i === S.active ? 'true' : 'false');
      if (i === S.active) n.scrollIntoView({ block: 'nearest' });
    });
  }

  function optionChoices(chip) {
    const opt = chip.opt;
    const typed = chip.input.value.trim().toLowerCase();
    const match = (name) => !typed || chip.picked !== undefined || name.toLowerCase().includes(typed);
    const ctx = hooks.context();
    let choices = [];
    if (opt.autocomplete) choices = S.ac.get(opt.name) ?? [];
    else if (opt.choices?.length)
      choices = opt.choices
        .map((c) => ({ name: localized(c, 'name', ctx.locale), value: c.value }))
        .filter((c) => match(c.name));
    else if (opt.type === OPT.BOOLEAN)
      choices = [
        { name: 'True', value: true },
        { name: 'False', value: false },
      ].filter((c) => match(c.name));
    else if (opt.type === OPT.CHANNEL)
      choices = ctx.channels
        .filter((c) =>
          opt.channel_types?.length ? opt.channel_types.includes(c.type) : c.type === 0 || c.type === 5,
        )
        .map((c) => ({ name: `#${c.name}`, value: c.id }))
        .filter((c) => match(c.name));
    else if (opt.type === OPT.USER || opt.type === OPT.MENTIONABLE)
      choices = ctx.users.map((u) => ({ name: u.name, value: u.id })).filter((c) => match(c.name));
    return choices.map((c) => ({
      label: c.name,
      value: c.value,
      pick: () => setChipValue(chip, c.name, c.value),
    }));
  }

  function renderPicker() {
    const ctx = hooks.context();
    let head = null;
    let items = [];
    let empty = '';
    if (!S.entry) {
      if (!text.value.startsWith('/') || S.hidden) return hidePicker();
      const here = ctx.channels.find((c) => c.id === ctx.channelId);
      const visible = commandEntries(ctx.commands, ctx.locale).filter((e) =>
        offeredHere(e.command, here, ctx.me?.permissions),
      );
      items = matchEntries(visible, text.value.slice(1)).map((e) => ({
        label: `/${e.label}`,
        description: e.description,
        aside: ctx.applicationName,
        icon: el('span', { class: 'app-icon', text: ctx.applicationName.slice(0, 1) }),
        pick: () => startCommand(e),
      }));
      head = el(
        'div',
        {},
        el('span', { class: 'picker-title', text: t('commandsMatching') }),
        el('b', { text: text.value }),
      );
      empty = 'No commands match. Commands you lack the permissions for are hidden.';
    } else if (S.focus && S.focus !== 'rest' && S.focus !== 'text') {
      const opt = S.focus.opt;
      head = el(
        'div',
        {},
        el('b', { class: 'picker-option', text: opt.name }),
        el('span', { class: 'picker-title', text: ` ${describe(opt) ?? ''}` }),
        opt.required ? null : el('span', { class: 'picker-optional', text: ` ${t('optional')}` }),
      );
      items = optionChoices(S.focus);
      if (opt.autocomplete) empty = S.acLoading === opt.name ? t('loadingOptions') : t('noOptions');
      if (opt.type === OPT.ATTACHMENT) empty = t('dropFile');
    } else {
      const present = new Set(S.chips.map((c) => c.opt.name));
      const typed = text.value.trim().toLowerCase();
      items = S.entry.options
        .filter((o) => !present.has(o.name) && (!typed || o.name.includes(typed)))
        .map((o) => ({
          label: o.name,
          description: describe(o),
          aside: o.required ? t('required') : t('optional'),
          pick: () => {
            text.value = '';
            addChip(o);
          },
        }));
      head = el(
        'div',
        {},
        el('b', { text: `/${S.entry.label}` }),
        el('span', { class: 'picker-title', text: ` ${S.entry.description ?? ''}` }),
      );
      if (!items.length && !typed) {
        items = [];
        empty = t('pressEnter');
      }
    }
    if (S.hidden) return hidePicker();
    S.items = items;
    // -1: nothing highlighted (the options offered after the required ones, until an arrow key or
    // the pointer picks one out: Enter then sends the command, as in Discord).
    S.active = Math.min(S.active, Math.max(0, items.length - 1));
    pickerHead.replaceChildren(head ?? '');
    pickerList.replaceChildren(
      ...items.map(pickerItem),
      ...(items.length || !empty ? [] : [el('div', { class: 'picker-empty', text: empty })]),
    );
    emojify(pickerList);
    picker.hidden = false;
  }

  // ---------------------------------------------------------------- autocomplete

  /** Values as Discord sends them in an autocomplete: the focused one as typed, the others typed. */
  function partialValues(focused) {
    const out = {};
    for (const c of S.chips) {
      if (c.opt.type === OPT.ATTACHMENT) continue;
      const raw = c.input.value.trim();
      if (c === focused) out[c.opt.name] = c.input.value;
      else if (raw !== '') {
        const v = convert(c);
        if (v.ok) out[c.opt.name] = v.value;
      }
    }
    return out;
  }

  function requestAutocomplete(chip) {
    const seq = ++S.acSeq;
    S.acLoading = chip.opt.name;
    clearTimeout(S.acTimer);
    S.acTimer = setTimeout(async () => {
      const ctx = hooks.context();
      try {
        const r = await hooks.api('/api/autocomplete', {
          userId: ctx.userId,
          channelId: ctx.channelId,
          name: S.entry.name,
          subcommand: S.entry.sub,
          options: partialValues(chip),
          focused: chip.opt.name,
        });
        if (seq !== S.acSeq) return;
        S.ac.set(chip.opt.name, r.choices ?? []);
      } catch {
        if (seq !== S.acSeq) return;
        S.ac.set(chip.opt.name, []);
      }
      S.acLoading = null;
      if (S.focus === chip) renderPicker();
    }, 120);
  }

  // ---------------------------------------------------------------- sending

  /** A chip's value as the option's type wants it, or why not. */
  function convert(chip) {
    const o = chip.opt;
    const raw = chip.input.value.trim();
    const v = chip.picked ?? raw;
    const range = (n) =>
      (o.min_value !== undefined && n < o.min_value) || (o.max_value !== undefined && n > o.max_value)
        ? `${o.name} must be between ${o.min_value ?? '−∞'} and ${o.max_value ?? '∞'}`
        : null;
    switch (o.type) {
      case OPT.INTEGER:
      case OPT.NUMBER: {
        const n = Number(v);
        if (raw === '' || !Number.isFinite(n) || (o.type === OPT.INTEGER && !Number.isInteger(n)))
          return {
            ok: false,
            error: `${o.name} must be ${o.type === OPT.INTEGER ? 'a whole number' : 'a number'}`,
          };
        const bad = range(n);
        return bad ? { ok: false, error: bad } : { ok: true, value: n };
      }
      case OPT.BOOLEAN: {
        if (typeof v === 'boolean') return { ok: true, value: v };
        if (/^(true|yes)$/i.test(raw)) return { ok: true, value: true };
        if (/^(false|no)$/i.test(raw)) return { ok: true, value: false };
        return { ok: false, error: `${o.name} must be True or False` };
      }
      case OPT.CHANNEL:
      case OPT.USER:
      case OPT.MENTIONABLE: {
        if (chip.picked !== undefined) return { ok: true, value: chip.picked };
        const match = optionChoices(chip).find(
          (c) => c.label.replace(/^#/, '').toLowerCase() === raw.replace(/^#/, '').toLowerCase(),
        );
        return match
          ? { ok: true, value: match.value }
          : { ok: false, error: `${o.name}: pick one from the list` };
      }
      default: {
        if (o.choices?.length) {
          const locale = hooks.context().locale;
          const names = (x) => [x.name, localized(x, 'name', locale)].map((n) => n.toLowerCase());
          const c = o.choices.find(
            (x) => names(x).includes(raw.toLowerCase()) || String(x.value) === String(v),
          );
          const shown = o.choices.map((x) => localized(x, 'name', locale)).join(', ');
          return c
            ? { ok: true, value: c.value }
            : { ok: false, error: `${o.name} must be one of: ${shown}` };
        }
        if (o.min_length !== undefined && String(v).length < o.min_length)
          return { ok: false, error: `${o.name} needs at least ${o.min_length} characters` };
        if (o.max_length !== undefined && String(v).length > o.max_length)
          return { ok: false, error: `${o.name} takes at most ${o.max_length} characters` };
        return { ok: true, value: String(v) };
      }
    }
  }

  async function submitCommand() {
    const ctx = hooks.context();
    const entry = S.entry;
    const options = {};
    const files = {};
    const errors = [];
    for (const chip of S.chips) {
      const o = chip.opt;
      if (o.type === OPT.ATTACHMENT) {
        if (chip.file) files[o.name] = chip.file;
        else if (o.required) errors.push([chip, t('needsFile', { name: o.name })]);
        continue;
      }
      if (chip.input.value.trim() === '') {
        if (o.required) errors.push([chip, t('isRequired', { name: o.name })]);
        continue;
      }
      const v = convert(chip);
      if (!v.ok) errors.push([chip, v.error]);
      else options[o.name] = v.value;
    }
    if (errors.length) {
      for (const [chip] of errors) chip.node.classList.add('invalid');
      errors[0][0].input.focus();
      status(errors.map(([, e]) => e).join(' · '), true);
      return;
    }
    const attachments = {};
    for (const [name, file] of Object.entries(files)) attachments[name] = await fileJson(file);
    reset();
    status('');
    const sending = hooks.api('/api/command', {
      userId: ctx.userId,
      channelId: ctx.channelId,
      name: entry.name,
      ...(entry.sub ? { subcommand: entry.sub } : {}),
      options,
      attachments,
    });
    hooks.sent(null);
    hooks.sent(await sending);
  }

  async function submitText() {
    const ctx = hooks.context();
    const content = text.value.trim();
    if (!content && !S.uploads.length) return;
    if (content.startsWith('/')) {
      status(`No command ${content.split(/\s/)[0]}: pick one from the list`, true);
      return;
    }
    // The files stay in the box until the message is posted (a refused post loses nothing).
    const sending = S.uploads;
    const files = await Promise.all(sending.map((u) => fileJson(u.file)));
    text.value = '';
    await hooks.api('/api/say', { userId: ctx.userId, channelId: ctx.channelId, content, files });
    for (const u of sending) removeUpload(u);
    hooks.sent(null);
  }

  const submit = () =>
    (S.entry ? submitCommand() : submitText()).catch((err) => status(String(err.message ?? err), true));

  // ---------------------------------------------------------------- keys

  function onKey(e) {
    const target = e.target;
    const chip = S.chips.find((c) => c.input === target);
    const open = !picker.hidden && S.items.length > 0;
    if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && open) {
      e.preventDefault();
      const n = S.items.length;
      S.active =
        S.active < 0
          ? e.key === 'ArrowDown'
            ? 0
            : n - 1
          : (S.active + (e.key === 'ArrowDown' ? 1 : -1) + n) % n;
      paintActive();
      return;
    }
    if (e.key === 'Escape') {
      e.preventDefault();
      if (!picker.hidden) {
        S.hidden = true;
        hidePicker();
      } else if (S.entry) reset();
      return;
    }
    // Enter picks the highlighted suggestion (a command, a choice, an optional option); with none
    // highlighted among the optional options it sends. Tab picks the highlighted one, else the first:
    // it never leaves the message box while a command is being written.
    const rest = S.entry && !chip;
    if ((e.key === 'Enter' || e.key === 'Tab') && open && !e.shiftKey) {
      const index = S.active >= 0 ? S.active : e.key === 'Tab' || !rest ? 0 : -1;
      const item = S.items[index];
      if (item) {
        e.preventDefault();
        item.pick();
        return;
      }
    }
    if (e.key === 'Tab' && S.entry) {
      // Nothing to pick: on to the next option (Shift: the previous one), staying in the box.
      e.preventDefault();
      const stops = [...S.chips.map((c) => c.input), text];
      const at = stops.indexOf(target);
      stops[(at + (e.shiftKey ? -1 : 1) + stops.length) % stops.length]?.focus();
      return;
    }
    if (e.key === 'Enter') {
      e.preventDefault();
      if (chip?.opt.type === OPT.ATTACHMENT && !chip.file) {
        chip.input.click();
        return;
      }
      void submit();
      return;
    }
    if (e.key === 'Backspace' && S.entry) {
      const empty = chip ? chip.opt.type === OPT.ATTACHMENT || chip.input.value === '' : text.value === '';
      if (!empty) return;
      e.preventDefault();
      if (!chip) {
        S.chips[S.chips.length - 1]?.input.focus();
        if (!S.chips.length) backToText();
        return;
      }
      const i = S.chips.indexOf(chip);
      if (chip.opt.type === OPT.ATTACHMENT && chip.file) {
        chip.file = null;
        chip.input.textContent = 'choose a file';
        chip.node.classList.remove('filled');
        return;
      }
      if (!chip.opt.required) removeChip(chip);
      if (i === 0) backToText();
      else (S.chips[i - 1] ?? S.chips[0])?.input.focus();
    }
  }

  /** Backspace on the first option: back to the typed "/command", as in Discord. */
  function backToText() {
    const label = S.entry.label;
    reset();
    text.value = `/${label}`;
    text.focus();
    S.hidden = false;
    renderPicker();
  }

  // ---------------------------------------------------------------- wiring

  text.addEventListener('input', () => {
    S.hidden = false;
    S.active = S.entry && !text.value.trim() ? -1 : 0;
    status('');
    renderPicker();
  });
  text.addEventListener('focus', () => {
    S.focus = S.entry ? 'rest' : 'text';
    // The optional options are offered with none highlighted (typing one's name highlights the first).
    if (S.entry) S.active = text.value.trim() ? 0 : -1;
    renderPicker();
  });
  form.addEventListener('keydown', onKey);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void submit();
  });
  form.addEventListener('focusout', (e) => {
    if (!form.contains(e.relatedTarget))
      setTimeout(() => !form.contains(document.activeElement) && hidePicker(), 0);
  });
  $('#attach').addEventListener('click', () => {
    S.fileTarget = null;
    fileInput.click();
  });
  $('#attach').replaceChildren(icon('plus', 24));
  fileInput.addEventListener('change', () => {
    addFiles([...(fileInput.files ?? [])]);
    fileInput.value = '';
  });
  renderEntry();

  return {
    addFiles,
    reset,
    focus: () => (S.chips[0]?.input ?? text).focus(),
    /** The member or channel changed: commands they may use and the placeholder follow. */
    refresh() {
      placeholder();
      const ctx = hooks.context();
      const here = ctx.channels.find((c) => c.id === ctx.channelId);
      if (S.entry && !offeredHere(S.entry.command, here, ctx.me?.permissions)) reset();
      if (!picker.hidden) renderPicker();
    },
    get mode() {
      return S.entry ? S.entry.label : null;
    },
  };
}
