'use strict';
// The notes page. One rule matters: a save is ONE operation with ONE Idempotency-Key, however many
// times it is sent. If a response is lost after the server saved the note, the retry carries the
// same key and the server answers with the stored response instead of saving a second note.

const PENDING = 'notes.pendingSave'; // localStorage entry: the save in flight, {key, title}
const MAX_ATTEMPTS = 6;              // per save (or per resume)
const MAX_TOTAL_MS = 60000;          // per save: give up (but keep the pending entry) after this
const ATTEMPT_TIMEOUT_MS = 10000;    // an attempt with no answer by then counts as lost
const BASE_DELAY_MS = 250;           // backoff: 250 ms, 500 ms, 1 s, ... capped below
const MAX_DELAY_MS = 8000;

const form = document.getElementById('new-note');
const titleInput = document.getElementById('title');
const saveButton = document.getElementById('save');
const statusLine = document.getElementById('status');
const list = document.getElementById('notes');

function setStatus(text, state, extra = {}) {
  statusLine.textContent = text;
  statusLine.dataset.state = state;
  // Machine-readable copies for tests and tools; the text is for people.
  statusLine.dataset.replayed = String(Boolean(extra.replayed));
  statusLine.dataset.resumed = String(Boolean(extra.resumed));
  statusLine.dataset.attempts = String(extra.attempts || 0);
  // dataset.settled (what the key status endpoint last said) is set where it is asked, and kept.
}

// crypto.randomUUID() exists only in secure contexts (https, or http on localhost/127.0.0.1).
// Served over plain http on another address, fall back to a v4 UUID from getRandomValues.
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function loadPending() {
  try {
    const p = JSON.parse(localStorage.getItem(PENDING));
    if (p && typeof p.key === 'string' && typeof p.title === 'string') return p;
  } catch (ignored) { /* a broken entry is no entry */ }
  return null;
}

// Removes the entry only if it is still ours: another tab may have started a save of its own.
function clearPending(key) {
  const p = loadPending();
  if (!p || p.key === key) localStorage.removeItem(PENDING);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Exponential backoff with full jitter: a random wait in [0, min(cap, base * 2^(n-1))), so that
// many clients that failed together do not all come back at the same instant.
function backoff(attempt) {
  return Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
}

// Retry-After is delay-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable.
// A date is measured against the answer's own Date field, so a server clock that differs from
// this computer's does not stretch or cut the wait.
function retryAfterMs(answer) {
  const value = answer.headers.get('Retry-After');
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  const sent = Date.parse(answer.headers.get('Date') || '');
  return Math.max(0, date - (Number.isNaN(sent) ? Date.now() : sent));
}

// The problem type with which Idem's filter answers 422 for a key used with another body. Any
// other 422 is an ordinary final answer of the application.
const KEY_REUSED = 'urn:idem:problem:idempotency-key-reused';

function isKeyReused(answer) {
  const type = (answer.headers.get('Content-Type') || '').split(';')[0].trim().toLowerCase();
  const p = type === 'application/problem+json' ? parseJson(answer.text) : null;
  return answer.status === 422 && p !== null && p.type === KEY_REUSED;
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (ignored) {
    return null;
  }
}

function problemDetail(answer) {
  const p = parseJson(answer.text);
  return (p && (p.detail || p.title)) || `HTTP ${answer.status}`;
}

// One attempt. Resolves to {status, headers, text}, or to null when no complete answer arrived
// (network error, connection reset, timeout, a body cut off): then the note may or may not
// exist, and only a retry with the same key can find out safely.
async function send(pending, body) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ATTEMPT_TIMEOUT_MS);
  try {
    const response = await fetch('/notes', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': pending.key },
      body,
      cache: 'no-store',
      signal: abort.signal,
    });
    // The body is read under the same guard and timeout: an answer lost halfway is lost.
    const text = await response.text();
    return { status: response.status, headers: response.headers, text };
  } catch (lost) {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

// Asks the service's key status endpoint what it recorded for this save's key, after an attempt
// whose outcome is unknown: {state: 'completed', status}, {state: 'in_progress', waitMs} or
// {state: 'not_found'}; null when it could not tell (no answer, or anything but the endpoint's
// own documents: a 404 counts only with the endpoint's "state":"not_found"). Only ever reads:
// whatever it says, the next step is a resend with the same key, which is always safe.
const STATUS_TIMEOUT_MS = 3000;

async function askStatus(key) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), STATUS_TIMEOUT_MS);
  try {
    const response = await fetch(`/idempotency-keys/${encodeURIComponent(key)}?operation=${encodeURIComponent('POST /notes')}`,
      { cache: 'no-store', signal: abort.signal });
    const doc = parseJson(await response.text());
    if (!doc) return null;
    if (response.status === 200 && doc.state === 'completed' && Number.isInteger(doc.status)) {
      return { state: 'completed', status: doc.status };
    }
    if (response.status === 200 && doc.state === 'in_progress' && Number.isInteger(doc.retryAfterSeconds)) {
      return { state: 'in_progress', waitMs: doc.retryAfterSeconds * 1000 };
    }
    if (response.status === 404 && doc.state === 'not_found') return { state: 'not_found' };
    return null;
  } catch (unreachable) {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

// What the status line says about a key status answer.
function settledText(known) {
  if (known.state === 'completed') return 'the server says it completed this save; fetching its stored answer';
  if (known.state === 'in_progress') return 'the server is still working on this save';
  return 'the server has no record of this save; sending it again';
}

let busy = false; // one save at a time in this tab

// Sends one save until it gets a final answer, a bounded number of times.

async function save(pending, resumed) {
  busy = true;
  saveButton.disabled = true;
  const started = Date.now();
  // The same bytes on every attempt: the server compares a retry's body with the first one's,
  // and another body under the same key would be refused (422).
  const body = JSON.stringify({ title: pending.title });
  const verb = resumed ? 'Resuming' : 'Saving';
  try {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      setStatus(`${verb} “${pending.title}” (attempt ${attempt} of ${MAX_ATTEMPTS})…`, 'saving', { resumed, attempts: attempt });
      const answer = await send(pending, body);
      const note = answer && answer.status === 201 ? parseJson(answer.text) : null;

      if (note) {
        // Same-origin fetch can read every response header, so no CORS exposure is needed here.
        // (Served cross-origin, the server would have to list it in Access-Control-Expose-Headers.)
        const replayed = answer.headers.get('Idempotent-Replayed') === 'true';
        clearPending(pending.key);
        titleInput.value = '';
        setStatus(
          `Saved note #${note.id} “${note.title}”` +
            (replayed
              ? ' — replayed: the server had already saved it, so this answer is the stored one and no second note was created.'
              : '.') +
            (resumed ? ' (Resumed after a reload, with the same key.)' : '') +
            (attempt > 1 ? ` ${attempt} attempts.` : ''),
          'saved', { replayed, resumed, attempts: attempt });
        await refreshList();
        return;
      }
      if (answer && isKeyReused(answer)) {
        // The key was used before with another body. Retrying cannot help; dropping the entry
        // lets the user save again, under a new key.
        clearPending(pending.key);
        setStatus(`Not saved: this save's key was already used with different content (${problemDetail(answer)}). Press Save to try again as a new note.`, 'error', { resumed });
        return;
      }

      // Worth retrying with the same key, since the outcome is still unknown: no (complete)
      // answer, 408, 409 (the first attempt is still being processed, with or without
      // Retry-After), 425, 429, 503 (store or database unavailable, or the outcome could not be
      // recorded) and gateway errors; but never an answer the server replayed from its store.
      const replayedAnswer = answer !== null && answer.headers.get('Idempotent-Replayed') === 'true';
      const retryable = answer === null || answer.status === 201
          || (!replayedAnswer && [408, 409, 425, 429, 502, 503, 504].includes(answer.status));
      if (!retryable) {
        // A final answer (400 for a bad title, ...): the same request would get the same answer.
        clearPending(pending.key);
        setStatus(`Not saved: ${problemDetail(answer)}`, 'error', { resumed });
        return;
      }
      // The server's Retry-After beats our own guess.
      let wait = answer ? retryAfterMs(answer) : null;
      if (wait === null) wait = backoff(attempt);
      if (attempt === MAX_ATTEMPTS || Date.now() - started + wait > MAX_TOTAL_MS) break;
      let why = answer === null ? 'no answer' : answer.status === 201 ? 'unreadable answer' : `HTTP ${answer.status}`;
      // No answer, or a gateway's: the save may have run. The key status settles it before the
      // resend: done or unknown, resend now (a replay, or the first run); running, wait as told.
      if (answer === null || [502, 503, 504].includes(answer.status)) {
        const known = await askStatus(pending.key);
        if (known) {
          wait = known.state === 'in_progress' ? Math.min(known.waitMs, MAX_DELAY_MS) : 0;
          why = `${why}; ${settledText(known)}`;
          statusLine.dataset.settled = known.state;
        }
      }
      setStatus(`${verb} “${pending.title}”: ${why}, retrying with the same key in ${(wait / 1000).toFixed(1)} s…`, 'saving', { resumed, attempts: attempt });
      await sleep(wait);
    }
    // Gave up for now, but the entry stays: a reload, or Save with the same title, sends it again
    // with the same key, so it still cannot create a second note.
    titleInput.value = pending.title;
    setStatus(`Not confirmed yet: “${pending.title}” may or may not be saved. Press Save or reload the page to try again safely (same key).`, 'error', { resumed });
  } finally {
    busy = false;
    saveButton.disabled = false;
  }
}

async function refreshList() {
  try {
    const response = await fetch('/notes', { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const notes = await response.json();
    list.replaceChildren(...notes.map((n) => {
      const li = document.createElement('li');
      li.dataset.id = n.id;
      const id = document.createElement('span');
      id.className = 'id';
      id.textContent = `#${n.id}`;
      li.append(id, ' ', n.title); // strings become text nodes, never HTML
      return li;
    }));
    return true;
  } catch (e) {
    return false;
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const title = titleInput.value.trim();
  if (!title || busy) return;
  // The key is made once per save, BEFORE the first attempt, never per attempt. Saving the same
  // title again while an unconfirmed save of it is pending continues that save (same key).
  let pending = loadPending();
  if (!pending || pending.title !== title) {
    pending = { key: newKey(), title };
    // Stored before the first send: if the tab dies mid-request, the next load resumes it.
    localStorage.setItem(PENDING, JSON.stringify(pending));
  }
  save(pending, false);
});

async function start() {
  const pending = loadPending();
  if (pending) {
    // An earlier visit left a save unconfirmed (reload, crash, closed tab). Resume it with the
    // same key: if the note was saved, the server replays its answer; if not, it saves it now.
    titleInput.value = pending.title;
    setStatus(`Resuming an unfinished save of “${pending.title}” with the same key…`, 'saving', { resumed: true });
  }
  const listed = await refreshList();
  if (pending) {
    // Ask first what became of it, to say so while the resend (same key) fetches the answer.
    const known = await askStatus(pending.key);
    if (known) {
      statusLine.dataset.settled = known.state;
      setStatus(`Resuming an unfinished save of “${pending.title}”: ${settledText(known)}…`, 'saving', { resumed: true });
    }
    await save(pending, true);
  } else {
    setStatus(listed ? 'Ready.' : 'Could not load the notes; is the service running?', listed ? 'ready' : 'error');
  }
}

start();
