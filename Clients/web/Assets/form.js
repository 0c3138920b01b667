// nav-web's form: what the page asks before a navigation whose target has a setup, or before
// completing a flow with a result.
const $ = (id) => document.getElementById(id);

// A form from a JSON Schema object: one field per property; values typed as the schema says
// (navd validates and its message appears in the form).
let submitForm = null;
export function openForm(title, schema, prefill, submit) {
  $('form-title').textContent = title;
  const fields = $('form-fields');
  fields.replaceChildren();
  const required = new Set(schema.required || []);
  for (const [name, p] of Object.entries(schema.properties || {})) {
    const label = document.createElement('label');
    const hint = [p.type || 'any', p.enum ? 'one of ' + p.enum.join(', ') : '', p.pattern ? 'pattern ' + p.pattern : ''].filter(Boolean).join(', ');
    label.append(`${name}${required.has(name) ? '*' : ''} `);
    const input = document.createElement('input');
    input.name = name;
    input.dataset.type = p.type || 'any';
    if (prefill[name] !== undefined) input.value = typeof prefill[name] === 'string' ? prefill[name] : JSON.stringify(prefill[name]);
    label.append(input, ` ${hint}`);
    fields.append(label);
  }
  $('form-error').hidden = true;
  $('form').hidden = false;
  submitForm = submit;
  const first = fields.querySelector('input');
  if (first) first.focus();
}

export function closeForm() { $('form').hidden = true; submitForm = null; }

function formValues() {
  const out = {};
  for (const input of $('form-fields').querySelectorAll('input')) {
    const v = input.value;
    if (v === '') continue;
    const type = input.dataset.type;
    if (type === 'integer' || type === 'number') out[input.name] = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v) ? Number(v) : v;
    else if (type === 'boolean') out[input.name] = v === 'true' ? true : v === 'false' ? false : v;
    else if (type === 'object' || type === 'array') { try { out[input.name] = JSON.parse(v); } catch { out[input.name] = v; } }
    else out[input.name] = v;
  }
  return out;
}

$('form').onsubmit = (e) => { e.preventDefault(); if (submitForm) submitForm(formValues()); };
$('form-cancel').onclick = closeForm;
