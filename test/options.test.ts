/**
 * OptionResolver: typed reads of a slash command's options from the raw interaction
 * data (what the gateway and POST /interactions both deliver), with what Discord
 * actually sends: subcommands and groups, options left out, attachments and channels
 * by id with their objects in `resolved`, and autocomplete's half-typed values.
 */
import {
  ApplicationCommandOptionType as T,
  ChannelType,
  type APIApplicationCommandInteractionDataOption,
  type APIInteractionDataResolved,
} from 'discord-api-types/v10';
import { describe, expect, it } from 'vitest';
import { OptionError, OptionResolver } from '../src/services/discord/interactions/options.js';

type Option = APIApplicationCommandInteractionDataOption;

const resolver = (options: unknown[] | undefined, resolved?: APIInteractionDataResolved) =>
  new OptionResolver(options as Option[] | undefined, resolved);

const ATTACHMENT = {
  id: '1300000000000000001',
  filename: 'fox.png',
  size: 1234,
  url: 'https://cdn.discordapp.com/attachments/1/2/fox.png',
  proxy_url: 'https://media.discordapp.net/attachments/1/2/fox.png',
  content_type: 'image/png',
};
const CHANNEL = {
  id: '1300000000000000002',
  name: 'gallery',
  type: ChannelType.GuildForum,
  permissions: '0',
};

describe('OptionResolver', () => {
  it('reads options at the top level, by type', () => {
    const o = resolver([
      { name: 'prompt', type: T.String, value: 'a fox' },
      { name: 'resemblance', type: T.Integer, value: 70 },
      { name: 'detail', type: T.Number, value: 0.5 },
      { name: 'magic_prompt', type: T.Boolean, value: false },
    ]);
    expect(o.getSubcommand()).toBeNull();
    expect(o.getSubcommandGroup()).toBeNull();
    expect(o.getString('prompt', true)).toBe('a fox');
    expect(o.getInteger('resemblance')).toBe(70);
    expect(o.getNumber('detail')).toBe(0.5);
    expect(o.getBoolean('magic_prompt')).toBe(false);
  });

  it('a subcommand: its name and its own options', () => {
    const o = resolver([
      {
        name: 'set',
        type: T.Subcommand,
        options: [{ name: 'cooldown_seconds', type: T.Integer, value: 600 }],
      },
    ]);
    expect(o.getSubcommand()).toBe('set');
    expect(o.getSubcommand(true)).toBe('set');
    expect(o.getSubcommandGroup()).toBeNull();
    expect(o.getInteger('cooldown_seconds', true)).toBe(600);
  });

  it('a subcommand without options', () => {
    const o = resolver([{ name: 'show', type: T.Subcommand }]);
    expect(o.getSubcommand(true)).toBe('show');
    expect(o.getString('anything')).toBeNull();
  });

  it('a subcommand group: the group, the subcommand inside it and its options', () => {
    const o = resolver([
      {
        name: 'gallery',
        type: T.SubcommandGroup,
        options: [
          {
            name: 'set',
            type: T.Subcommand,
            options: [{ name: 'channel', type: T.Channel, value: CHANNEL.id }],
          },
        ],
      },
    ]);
    expect(o.getSubcommandGroup()).toBe('gallery');
    expect(o.getSubcommand(true)).toBe('set');
    expect(o.getChannel('channel')?.id).toBe(CHANNEL.id);
  });

  it('a required subcommand that is missing is an OptionError', () => {
    expect(() => resolver([]).getSubcommand(true)).toThrow(OptionError);
    expect(() => resolver(undefined).getSubcommand(true)).toThrow(/subcommand/);
  });

  it('an optional option left out is null; a required one is an OptionError naming it', () => {
    const o = resolver([{ name: 'prompt', type: T.String, value: 'x' }]);
    expect(o.getString('negative_prompt')).toBeNull();
    expect(o.getInteger('resemblance')).toBeNull();
    expect(o.getNumber('detail')).toBeNull();
    expect(o.getBoolean('magic_prompt')).toBeNull();
    expect(o.getAttachment('image')).toBeNull();
    expect(o.getChannel('channel')).toBeNull();
    expect(() => o.getString('task_id', true)).toThrow(new OptionError('task_id', 'is missing'));
    expect(() => o.getInteger('resemblance', true)).toThrow(OptionError);
    expect(() => o.getAttachment('image', true)).toThrow(/"image" is missing/);
  });

  it('an option of another type than asked is an OptionError (out-of-date command data), even when optional', () => {
    const o = resolver([
      { name: 'resemblance', type: T.String, value: '70' },
      { name: 'prompt', type: T.Integer, value: 3 },
    ]);
    expect(() => o.getInteger('resemblance')).toThrow(OptionError);
    expect(() => o.getInteger('resemblance')).toThrow(/is of type 3, expected 4/);
    expect(() => o.getString('prompt', true)).toThrow(OptionError);
    expect(() => o.getNumber('resemblance')).toThrow(OptionError);
    expect(() => o.getBoolean('prompt')).toThrow(OptionError);
    expect(() => o.getAttachment('prompt')).toThrow(OptionError);
    expect(() => o.getChannel('prompt')).toThrow(OptionError);
  });

  it('autocomplete: the focused option, with what was typed so far', () => {
    const o = resolver([
      { name: 'task_id', type: T.String, value: 'abc' },
      { name: 'song_id', type: T.String, value: 'so', focused: true },
    ]);
    expect(o.getFocused()).toEqual({ name: 'song_id', value: 'so' });
    expect(o.getString('task_id')).toBe('abc');
  });

  it('autocomplete inside a subcommand; a focused number comes back as the text typed', () => {
    const o = resolver([
      {
        name: 'add',
        type: T.Subcommand,
        options: [{ name: 'age', type: T.Integer, value: '4', focused: true }],
      },
    ]);
    expect(o.getFocused()).toEqual({ name: 'age', value: '4' });
  });

  it('no focused option is an OptionError', () => {
    expect(() => resolver([{ name: 'task_id', type: T.String, value: 'abc' }]).getFocused()).toThrow(
      OptionError,
    );
  });

  it('integers and numbers as autocomplete sends them (strings, maybe half typed)', () => {
    const o = resolver([
      { name: 'whole', type: T.Integer, value: '42' },
      { name: 'half', type: T.Integer, value: '4.' },
      { name: 'fraction', type: T.Integer, value: '4.5' },
      { name: 'empty', type: T.Integer, value: '' },
      { name: 'minus', type: T.Integer, value: '-' },
      { name: 'word', type: T.Integer, value: 'abc' },
      { name: 'n', type: T.Number, value: '0.25' },
      { name: 'n_empty', type: T.Number, value: '' },
      { name: 'n_word', type: T.Number, value: 'x1' },
      { name: 'n_inf', type: T.Number, value: 'Infinity' },
    ]);
    expect(o.getInteger('whole')).toBe(42);
    // "4." is a whole number so far (Number("4.") is 4); "4.5" is not.
    expect(o.getInteger('half')).toBe(4);
    expect(o.getInteger('fraction')).toBeNull();
    expect(o.getInteger('minus')).toBeNull();
    expect(o.getInteger('word')).toBeNull();
    expect(o.getNumber('n')).toBe(0.25);
    expect(o.getNumber('n_word')).toBeNull();
    expect(o.getNumber('n_inf')).toBeNull();
    // An empty box is nothing typed yet, not zero.
    expect(o.getInteger('empty')).toBeNull();
    expect(o.getNumber('n_empty')).toBeNull();
  });

  it('an attachment option: the attachment object from resolved.attachments', () => {
    const o = resolver([{ name: 'image', type: T.Attachment, value: ATTACHMENT.id }], {
      attachments: { [ATTACHMENT.id]: ATTACHMENT },
    });
    expect(o.getAttachment('image', true)).toEqual(ATTACHMENT);
  });

  it('an attachment id missing from resolved: null when optional, an OptionError when required', () => {
    const o = resolver([{ name: 'image', type: T.Attachment, value: ATTACHMENT.id }], { attachments: {} });
    expect(o.getAttachment('image')).toBeNull();
    expect(() => o.getAttachment('image', true)).toThrow(/no resolved attachment/);
    expect(
      resolver([{ name: 'image', type: T.Attachment, value: ATTACHMENT.id }]).getAttachment('image'),
    ).toBeNull();
  });

  it('a channel option: the channel from resolved.channels, or at least its id', () => {
    const withResolved = resolver([{ name: 'channel', type: T.Channel, value: CHANNEL.id }], {
      channels: { [CHANNEL.id]: CHANNEL },
    });
    expect(withResolved.getChannel('channel')).toEqual(CHANNEL);
    const bare = resolver([{ name: 'channel', type: T.Channel, value: CHANNEL.id }]);
    expect(bare.getChannel('channel')).toEqual({ id: CHANNEL.id });
  });

  it('a string option keeps its text as sent (no trimming, markdown untouched)', () => {
    const o = resolver([{ name: 'prompt', type: T.String, value: '  **bold** <@1>  ' }]);
    expect(o.getString('prompt')).toBe('  **bold** <@1>  ');
  });
});
