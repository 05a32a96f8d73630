// SPDX-License-Identifier: ISC
// Modal questions for the worksheet pages: a name to give (create, rename, clone) and a
// confirmation (delete). Built on <dialog>: focus stays inside, Escape cancels. The action
// runs while the dialog is open, so a refusal of the server (a name already taken) shows
// next to the field and the user can correct it.

import { field, h, showFault } from '../dom.js';

let seq = 0;

function open(title, body, okText, danger, action) {
  const id = `ws-dialog-${++seq}`;
  const error = h('p', { class: 'error', role: 'alert' });
  const ok = h('button', { type: 'submit', class: danger ? 'danger' : 'primary', text: okText });
  const cancel = h('button', { type: 'button', text: 'Cancel' });
  const form = h(
    'form',
    { method: 'dialog', novalidate: true },
    h('h2', { id: `${id}-title`, text: title }),
    body.nodes,
    error,
    h('div', { class: 'row ws-dialog-buttons' }, cancel, ok),
  );
  const dlg = h('dialog', { class: 'ws-dialog', 'aria-labelledby': `${id}-title` }, form);
  document.body.append(dlg);
  return new Promise((resolve) => {
    let result = null;
    const finish = () => {
      dlg.close();
      dlg.remove();
      resolve(result);
    };
    cancel.addEventListener('click', finish);
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      finish();
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const value = body.value ? body.value() : true;
      if (value === null) return;
      ok.disabled = true;
      try {
        result = action ? await action(value) : value;
        if (result === undefined) result = value;
        finish();
      } catch (err) {
        if (err.status === 401) return finish();
        if (!body.fault || !body.fault(err)) error.textContent = err.details || err.message;
      } finally {
        ok.disabled = false;
      }
    });
    dlg.showModal();
    (body.focus || ok).focus();
  });
}

// Asks for a name. action(name) may throw an ApiError (shown in the dialog). Resolves to
// action's result (or the name), null if cancelled.
export function askName({ title, label = 'Name', value = '', ok = 'Save', action }) {
  const f = field(`ws-dialog-name-${seq + 1}`, label, h('input', { name: 'name', maxlength: 128, required: true, autocomplete: 'off', value }));
  return open(
    title,
    {
      nodes: [f.wrap],
      focus: f.input,
      value: () => {
        const v = f.input.value.trim();
        if (!v) {
          showFault({ field: 'name', details: 'name: enter a name' }, { name: f });
          return null;
        }
        return v;
      },
      fault: (err) => showFault(err, { name: f }),
    },
    ok,
    false,
    action,
  );
}

// Asks to confirm. Resolves to action's result (or true), null if cancelled.
export function confirmDialog({ title, text, ok = 'Delete', danger = true, action }) {
  return open(title, { nodes: [h('p', { text })] }, ok, danger, action);
}

// Asks which keys of a drilldown to show apart (none: the top N and "other"). Resolves to
// the chosen keys in the order offered, or null if cancelled.
export function chooseKeys({ title, keys, chosen = [], max = 64 }) {
  const boxes = keys.map((k, i) => {
    const input = h('input', { type: 'checkbox', id: `ws-key-${seq + 1}-${i}`, value: k, checked: chosen.includes(k) });
    return { k, input, wrap: h('div', { class: 'ws-key' }, input, h('label', { for: input.id, text: k })) };
  });
  const hint = h('p', { class: 'hint', text: `None chosen: the largest keys and “other”. At most ${max}.` });
  const fs = h('fieldset', { class: 'ws-keys' }, h('legend', { text: 'Keys shown' }), boxes.map((b) => b.wrap));
  return open(
    title,
    {
      nodes: [hint, fs],
      focus: boxes[0] ? boxes[0].input : null,
      value: () => boxes.filter((b) => b.input.checked).map((b) => b.k),
    },
    'Show',
    false,
    async (list) => {
      if (list.length > max) throw new Error(`Choose at most ${max} keys.`);
      return list;
    },
  );
}
