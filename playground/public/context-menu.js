// A message's context menu, as Discord's right-click (or the More button in the message's hover
// toolbar) opens it: the message commands of the apps in the server under "Apps", then the copy
// entries. "Apps" lists the registered message commands (type 3) the member is offered, named in
// their language; a member lacking a command's default_member_permissions does not see it, and
// without any the entry is not there, as in Discord.

import { el } from './dom.js';
import { t } from './i18n.js';

let open = null;

export function closeMenu() {
  open?.remove();
  open = null;
}

/**
 * @param at {x, y} where to open (the pointer, or under the More button)
 * @param entries { apps: [{label, app, run()}], copy: [{label, run()}] }
 */
export function openMenu(at, entries) {
  closeMenu();
  const item = (label, run, extra = {}) =>
    el(
      'button',
      {
        type: 'button',
        class: 'menu-item',
        role: 'menuitem',
        onclick: () => {
          closeMenu();
          run();
        },
        ...extra,
      },
      label,
    );
  const apps = entries.apps.length
    ? el(
        'div',
        { class: 'menu-sub-host' },
        el(
          'button',
          {
            type: 'button',
            class: 'menu-item has-sub',
            role: 'menuitem',
            'aria-haspopup': 'menu',
            'data-menu': 'apps',
            // Clicking opens it too (hover does on a pointer; a touch or a keyboard has no hover).
            onclick: (e) => e.currentTarget.parentElement.classList.add('open'),
          },
          el('span', { text: t('apps') }),
          el('span', { class: 'chevron', 'aria-hidden': 'true', text: '›' }),
        ),
        el(
          'div',
          { class: 'menu sub', role: 'menu', 'aria-label': t('apps') },
          ...entries.apps.map((a) =>
            item(
              [
                el('span', { class: 'app-icon', 'aria-hidden': 'true', text: a.app.slice(0, 1) }),
                el('span', { class: 'menu-label', text: a.label }),
              ],
              a.run,
              { 'data-command': a.name },
            ),
          ),
        ),
      )
    : null;
  const menu = el(
    'div',
    { class: 'menu', id: 'context-menu', role: 'menu' },
    apps,
    apps ? el('div', { class: 'menu-separator', role: 'separator' }) : null,
    ...entries.copy.map((c) => item(el('span', { text: c.label }), c.run)),
  );
  document.body.append(menu);
  // Kept inside the window.
  const { width, height } = menu.getBoundingClientRect();
  menu.style.left = `${Math.max(4, Math.min(at.x, innerWidth - width - 4))}px`;
  menu.style.top = `${Math.max(4, Math.min(at.y, innerHeight - height - 4))}px`;
  menu.classList.toggle('flip', at.x + width * 2 > innerWidth);
  open = menu;
  menu.querySelector('.menu-item')?.focus();
}

/** Wires closing: a click elsewhere, Escape or resizing closes the menu (new messages do not). */
export function wireMenu() {
  document.addEventListener('mousedown', (e) => {
    if (open && !open.contains(e.target)) closeMenu();
  });
  document.addEventListener('keydown', (e) => e.key === 'Escape' && open && closeMenu());
  addEventListener('resize', closeMenu);
}
