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
