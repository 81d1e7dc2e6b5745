'use strict';
// siskin's chat page. Plain DOM, no libraries; every URL is relative to the
// page so the server can sit behind a reverse proxy under a path prefix.
// When /v1/models lists a speech model, answers can be spoken as they are
// written (the voice section below).
(() => {
  const $ = (id) => document.getElementById(id);
  // The page's own folder ("/prefix/" when a proxy mounts the server there).
  const base = location.pathname.endsWith('/') ? location.pathname : location.pathname + '/';
  const api = (path) => base + path;
  const storeKey = 'siskin.chat:' + base;
  const keyKey = 'siskin.apiKey:' + base;

  const state = loadState();
  let running = null; // {controller, msg, li} while an answer streams
  let renderQueued = false;
  let chatModels = []; // the /v1/models cards of chat models

  function loadState() {
    try {
      const s = JSON.parse(localStorage.getItem(storeKey));
      if (s && Array.isArray(s.messages)) return { messages: s.messages, settings: s.settings || {} };
    } catch (e) { /* a damaged entry starts a new conversation */ }
    return { messages: [], settings: {} };
  }

  function save() {
    try {
      localStorage.setItem(storeKey, JSON.stringify(state));
    } catch (e) {
      showBanner('The conversation could not be kept in this browser: ' + e.message);
    }
  }

  function showBanner(text) { $('banner').textContent = text; $('banner').hidden = false; }
  function hideBanner() { $('banner').hidden = true; }

  // ---- API key ----

  const apiKey = () => localStorage.getItem(keyKey) || '';

  function headers(extra) {
    const h = Object.assign({}, extra);
    const k = apiKey();
    if (k) h.Authorization = 'Bearer ' + k;
    return h;
  }

  function askKey() {
    const refused = apiKey() !== '';
    const err = $('key-error');
    err.textContent = refused ? 'The server refused this API key. Enter the key given to siskin serve --api-key.' : '';
    err.hidden = !refused;
    $('key-input').value = '';
    if (!$('key-dialog').open) $('key-dialog').showModal();
    $('key-input').focus();
    showBanner(refused ? 'Wrong API key: the server refused it.' : 'This server needs an API key.');
  }

  async function errorText(resp) {
    let text = resp.status + ' ' + resp.statusText;
    try {
      const j = await resp.json();
      if (j.error && j.error.message) text = j.error.message + (j.error.param ? ' (field: ' + j.error.param + ')' : '');
    } catch (e) { /* not JSON: keep the status line */ }
    return text;
  }

  // ---- models ----

  // isSpeechModel says whether a /v1/models card is a speech (TTS) model:
  // those go to the voice section, not the chat model list.
  const isSpeechModel = (m) => /speech|tts/i.test(m.task || '') || /(^|[-_/])tts([-_.]|$)/i.test(m.id || '');

  async function loadModels() {
    let resp;
    try {
      resp = await fetch(api('v1/models'), { headers: headers() });
    } catch (e) {
      showBanner('The server cannot be reached: ' + e.message);
      return;
    }
    if (resp.status === 401) { askKey(); return; }
    if (!resp.ok) { showBanner('Listing the models failed: ' + await errorText(resp)); return; }
    const list = (await resp.json()).data || [];
    chatModels = list.filter((m) => !isSpeechModel(m));
    const sel = $('model');
    sel.textContent = '';
    for (const m of chatModels) sel.append(new Option(m.id, m.id));
    if (chatModels.some((m) => m.id === state.settings.model)) sel.value = state.settings.model;
    showModelInfo();
    hideBanner();
    await loadVoices(list.filter(isSpeechModel));
    // A server of a speech model alone: the page reads typed text aloud.
    const speechOnly = !chatModels.length && voice.available;
    for (const id of ['chat-settings', 'speak-switch', 'regenerate']) $(id).hidden = speechOnly;
    $('model').parentElement.hidden = speechOnly;
    $('input').placeholder = speechOnly ? 'Text to speak' : 'Message the model';
    $('send').textContent = speechOnly ? 'Speak' : 'Send';
    if (speechOnly) $('model-info').textContent = 'Speech model only: what you type is read aloud.';
    updateControls();
  }

  function showModelInfo() {
    const m = chatModels.find((x) => x.id === $('model').value);
    $('model-info').textContent = m && m.max_model_len ? 'context ' + m.max_model_len + ' tokens' : '';
  }

  // ---- settings ----

  const fields = { system: 'system', temperature: 'temperature', 'top-p': 'top_p', 'max-tokens': 'max_tokens', seed: 'seed', thinking: 'thinking', tools: 'tools',
    'voice-name': 'voice', 'voice-language': 'language', 'speech-model': 'speech_model', 'speech-max': 'speech_max' };

  function bindSettings() {
    for (const [id, key] of Object.entries(fields)) {
      const el = $(id);
      if (state.settings[key] !== undefined) el.value = state.settings[key];
      el.addEventListener('input', () => { state.settings[key] = el.value; save(); });
    }
    $('model').addEventListener('change', () => { state.settings.model = $('model').value; save(); showModelInfo(); });
    $('settings').open = window.matchMedia('(min-width: 761px)').matches;
  }

  function num(id, parse) {
    const v = $(id).value.trim();
    return v === '' ? undefined : parse(v);
  }

  // requestBody builds the chat request; it returns null (with the reason
  // shown) when a setting is invalid.
  function requestBody() {
    const body = { model: $('model').value, messages: [], stream: true, stream_options: { include_usage: true }, return_token_ids: true };
    const system = $('system').value.trim();
    if (system) body.messages.push({ role: 'system', content: system });
    for (const m of state.messages) {
      // An answer that failed before writing anything is not sent back.
      if (m.role === 'assistant' && m.error && !m.content && !(m.tool_calls && m.tool_calls.length)) continue;
      const out = { role: m.role, content: m.content || '' };
      if (m.tool_calls && m.tool_calls.length) out.tool_calls = m.tool_calls;
      body.messages.push(out);
    }
    const set = { temperature: num('temperature', parseFloat), top_p: num('top-p', parseFloat), max_tokens: num('max-tokens', (v) => parseInt(v, 10)), seed: num('seed', (v) => parseInt(v, 10)) };
    for (const [k, v] of Object.entries(set)) if (v !== undefined && !Number.isNaN(v)) body[k] = v;
    // enable_thinking is the chat-template switch of Qwen3-style templates
    // (Spark's among them); templates without it ignore it.
    if ($('thinking').value) body.chat_template_kwargs = { enable_thinking: $('thinking').value === 'on' };
    const tools = $('tools').value.trim();
    $('tools-error').hidden = true;
    if (tools) {
      try {
        body.tools = JSON.parse(tools);
        if (!Array.isArray(body.tools)) throw new Error('expected a JSON array');
      } catch (e) {
        $('tools-error').textContent = 'Tools: ' + e.message;
        $('tools-error').hidden = false;
        $('settings').open = true;
        return null;
      }
    }
    return body;
  }

  // ---- Markdown: a small safe subset (escape first, then add tags) ----

  const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const esc = (s) => s.replace(/[&<>"']/g, (c) => escapes[c]);

  function emphasis(raw) {
    return esc(raw)
      .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^*\w])\*([^*\s](?:[^*]*[^*\s])?)\*(?!\w)/g, '$1<em>$2</em>')
      .replace(/~~([^~]+)~~/g, '<del>$1</del>');
  }

  function inline(raw) {
    let out = '';
    let last = 0;
    const re = /`([^`]+)`/g;
    for (let m; (m = re.exec(raw));) {
      out += emphasis(raw.slice(last, m.index)) + '<code>' + esc(m[1]) + '</code>';
      last = re.lastIndex;
    }
    return out + emphasis(raw.slice(last));
  }

  const listItem = /^\s*([-*+]|\d+[.)])\s+(.*)$/;

  function markdown(src) {
    const lines = src.replace(/\r\n?/g, '\n').split('\n');
    let html = '';
    let para = [];
    const flush = () => {
      if (para.length) html += '<p>' + para.map(inline).join('<br>') + '</p>';
      para = [];
    };
    for (let i = 0; i < lines.length;) {
      const line = lines[i];
      let m;
      if ((m = line.match(/^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/))) {
        flush();
        const code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) code.push(lines[i]);
        i++; // the closing fence, or the end while the block still streams
        html += '<pre>' + (m[2] ? '<span class="lang">' + esc(m[2]) + '</span>' : '') + '<code>' + esc(code.join('\n')) + '</code></pre>';
      } else if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
        flush();
        const h = Math.min(m[1].length + 2, 6); // answers sit below the page's own headings
        html += '<h' + h + '>' + inline(m[2]) + '</h' + h + '>';
        i++;
      } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flush();
        html += '<hr>';
        i++;
      } else if (/^\s*>/.test(line)) {
        flush();
        const quote = [];
        for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quote.push(lines[i].replace(/^\s*> ?/, ''));
        html += '<blockquote>' + markdown(quote.join('\n')) + '</blockquote>';
      } else if ((m = line.match(listItem))) {
        flush();
        const ordered = /\d/.test(m[1]);
        const items = [];
        for (let mm; i < lines.length && (mm = lines[i].match(listItem)) && /\d/.test(mm[1]) === ordered; i++) {
          items.push([mm[2]]);
          while (i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1]) && !listItem.test(lines[i + 1])) items[items.length - 1].push(lines[++i].trim());
        }
        const start = ordered && parseInt(m[1], 10) !== 1 ? ' start="' + parseInt(m[1], 10) + '"' : '';
        html += (ordered ? '<ol' + start + '>' : '<ul>') + items.map((t) => '<li>' + t.map(inline).join('<br>') + '</li>').join('') + (ordered ? '</ol>' : '</ul>');
      } else if (line.trim() === '') {
        flush();
        i++;
      } else {
        para.push(line);
        i++;
      }
    }
    flush();
    return html;
  }

  // ---- messages ----

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function messageEl(m) {
    const li = el('li', 'msg ' + m.role);
    li.append(el('div', 'who', m.role === 'user' ? 'You' : (m.model || 'Model')));
    const body = el('div', 'body');
    li.append(body);
    const read = el('button', 'link read-aloud', 'Read aloud');
    read.type = 'button';
    read.title = 'Read this message aloud with the chosen voice';
    read.addEventListener('click', () => readAloud(m));
    if (m.role === 'user') {
      body.textContent = m.content;
      li.append(read);
      return li;
    }
    const reasoning = el('details', 'reasoning');
    reasoning.append(el('summary', null, 'Reasoning'), el('div', 'text'));
    body.append(reasoning, el('div', 'content'), el('div', 'tools'), el('p', 'error-text'));
    li.append(el('div', 'stats'), read);
    fillAnswer(li, m);
    return li;
  }

  // fillAnswer updates an answer's parts in place, so a reasoning block the
  // reader opened stays open while text streams.
  function fillAnswer(li, m) {
    const q = (sel) => li.querySelector(sel);
    const live = running && running.msg === m;
    q('.reasoning').hidden = !m.reasoning;
    q('.reasoning summary').textContent = live && !m.content && !(m.tool_calls || []).length ? 'Reasoning…' : 'Reasoning';
    q('.reasoning .text').textContent = m.reasoning || '';
    const content = q('.content');
    content.innerHTML = markdown(m.content || '');
    content.classList.toggle('cursor', live);
    const tools = q('.tools');
    tools.textContent = '';
    for (const c of m.tool_calls || []) {
      const box = el('div', 'toolcall');
      box.append(el('span', null, 'Tool call: '), el('span', 'name', (c.function && c.function.name) || '?'));
      let args = (c.function && c.function.arguments) || '';
      try { args = JSON.stringify(JSON.parse(args), null, 2); } catch (e) { /* partial or not JSON: as sent */ }
      box.append(el('pre', null, args));
      tools.append(box);
    }
    q('.error-text').textContent = m.error || '';
    q('.error-text').hidden = !m.error;
    fillStats(q('.stats'), m);
  }

  function fillStats(box, m) {
    box.textContent = '';
    const s = m.stats || {};
    const parts = [];
    if (s.ttft_ms !== undefined) parts.push(['first token ' + Math.round(s.ttft_ms) + ' ms', 'time from sending to the first generated token']);
    if (s.tokens_per_s) parts.push([s.tokens_per_s.toFixed(1) + ' tokens/s', 'generation speed after the first token']);
    if (s.tokens !== undefined) parts.push([s.tokens + ' tokens', 'generated tokens']);
    if (s.first_audio_ms !== undefined) parts.push(['first audio ' + Math.round(s.first_audio_ms) + ' ms', 'time from asking to the first sound']);
    if (s.speech_rtf) parts.push(['speech ' + s.speech_rtf.toFixed(2) + '× real time', 'time to make the audio over its length (' + s.audio_s.toFixed(1) + ' s of audio); below 1 is faster than real time']);
    const why = { stop: 'finished', length: 'stopped at max tokens', stopped: 'stopped by you', tool_calls: 'tool call', abort: 'aborted by the server' };
    if (m.finish) parts.push([why[m.finish] || m.finish, 'why the answer ended']);
    for (const [text, title] of parts) {
      const span = el('span', null, text);
      span.title = title;
      box.append(span);
    }
  }

  function renderAll() {
    const log = $('log');
    log.textContent = '';
    for (const m of state.messages) log.append(messageEl(m));
    updateControls();
  }

  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      if (!running) return;
      const log = $('log');
      const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
      fillAnswer(running.li, running.msg);
      if (atBottom) log.scrollTop = log.scrollHeight;
      // Keep the partial answer now and then, so a reload mid-stream loses little.
      if (performance.now() - running.saved > 1000) { running.saved = performance.now(); save(); }
    });
  }

  function updateControls() {
    const busy = running !== null;
    $('send').hidden = busy;
    $('stop').hidden = !busy;
    $('stop-speech').hidden = busy || !speaking();
    $('regenerate').disabled = busy || state.messages.length === 0 || !chatModels.length;
    $('empty').hidden = state.messages.length > 0;
  }

  // ---- streaming ----

  // readEvents calls onData with each parsed `data:` payload of an SSE
  // response until [DONE] or the end of the body.
  async function readEvents(resp, onData) {
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      for (let k; (k = buf.indexOf('\n\n')) >= 0;) {
        const event = buf.slice(0, k);
        buf = buf.slice(k + 2);
        const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
        if (data === '[DONE]') return;
        if (data) onData(JSON.parse(data));
      }
    }
  }

  function applyChunk(run, j) {
    const m = run.msg;
    if (j.error) { m.error = j.error.message || String(j.error); return; }
    if (j.usage) run.usage = j.usage;
    const c = j.choices && j.choices[0];
    if (!c) return;
    const d = c.delta || {};
    const ids = c.token_ids || [];
    run.tokens += ids.length;
    if (!run.tFirst && (ids.length || d.content || d.reasoning_content || d.tool_calls)) run.tFirst = performance.now();
    if (d.content) m.content += d.content;
    if (d.reasoning_content) m.reasoning = (m.reasoning || '') + d.reasoning_content;
    for (const tc of d.tool_calls || []) {
      m.tool_calls = m.tool_calls || [];
      const k = tc.index !== undefined ? tc.index : m.tool_calls.length;
      const cur = m.tool_calls[k] || (m.tool_calls[k] = { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) cur.id = tc.id;
      if (tc.function && tc.function.name) cur.function.name = tc.function.name;
      if (tc.function && tc.function.arguments) cur.function.arguments += tc.function.arguments;
    }
    if (c.finish_reason) m.finish = c.finish_reason;
    if (d.content) feedSpeaker(run, false);
    scheduleRender();
  }

  async function generate() {
    const body = requestBody();
    if (!body) return;
    if (!body.model) { showBanner('No model to talk to: the model list is empty or not loaded yet.'); return; }
    hideBanner();
    const msg = { role: 'assistant', model: body.model, content: '', reasoning: '' };
    state.messages.push(msg);
    const run = { controller: new AbortController(), msg, li: null, t0: performance.now(), tFirst: 0, tokens: 0, usage: null, saved: performance.now() };
    running = run;
    if (voice.available && $('speak').checked) {
      run.speaker = startSpeaker(msg, run.t0);
      run.spoken = 0;
    }
    run.li = messageEl(msg);
    run.li.setAttribute('aria-busy', 'true');
    $('log').append(run.li);
    run.li.scrollIntoView({ block: 'end' });
    updateControls();
    try {
      const resp = await fetch(api('v1/chat/completions'), { method: 'POST', headers: headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body), signal: run.controller.signal });
      if (resp.status === 401) {
        msg.error = 'The server refused the API key.';
        askKey();
      } else if (!resp.ok) {
        msg.error = await errorText(resp);
      } else {
        await readEvents(resp, (j) => applyChunk(run, j));
      }
    } catch (e) {
      if (e.name === 'AbortError') msg.finish = 'stopped';
      else msg.error = 'The answer broke off: ' + e.message;
    }
    if (msg.finish === 'stopped' || msg.error) {
      if (run.speaker) silence();
    } else {
      feedSpeaker(run, true);
    }
    finishAnswer(run);
  }

  function finishAnswer(run) {
    const m = run.msg;
    const end = performance.now();
    const tokens = run.usage ? run.usage.completion_tokens : run.tokens;
    m.stats = Object.assign({}, m.stats, { tokens }); // speech numbers may be there already
    if (run.tFirst) {
      m.stats.ttft_ms = run.tFirst - run.t0;
      if (tokens > 1 && end > run.tFirst) m.stats.tokens_per_s = (tokens - 1) / ((end - run.tFirst) / 1000);
    }
    if (!m.reasoning) delete m.reasoning;
    running = null;
    run.li.removeAttribute('aria-busy');
    fillAnswer(run.li, m);
    save();
    updateControls();
    $('input').focus();
  }

  function send() {
    const text = $('input').value.trim();
    if (!text || running) return;
    state.messages.push({ role: 'user', content: text });
    $('log').append(messageEl(state.messages[state.messages.length - 1]));
    $('input').value = '';
    save();
    updateControls();
    if (!chatModels.length && voice.available) readAloud(state.messages[state.messages.length - 1]);
    else generate();
  }

  function regenerate() {
    if (running || !state.messages.length) return;
    if (state.messages[state.messages.length - 1].role === 'assistant') {
      state.messages.pop();
      $('log').lastElementChild.remove();
    }
    generate();
  }

  function stop() {
    if (running) running.controller.abort();
    silence();
  }

  function exportJSON() {
    const system = $('system').value.trim();
    const messages = (system ? [{ role: 'system', content: system }] : []).concat(state.messages);
    const data = { exported: new Date().toISOString(), model: $('model').value, settings: state.settings, messages };
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' }));
    a.download = 'siskin-chat-' + data.exported.slice(0, 19).replace(/[:T]/g, '-') + '.json';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }

  function newChat() {
    if (running) return;
    silence();
    if (state.messages.length && !window.confirm('Start a new chat? The current conversation is removed from this browser (export it first to keep it).')) return;
    state.messages = [];
    save();
    renderAll();
    $('input').focus();
  }

  // ---- voice ----
  // A spoken message is one session of WS v1/audio/speech/stream. Its text
  // goes in as pieces (sentences, lines) while the answer is written, each
  // sent as input.text + input.done so the server speaks it as soon as it
  // is whole; the PCM that comes back is scheduled back to back on one
  // AudioContext, so sentences follow each other without a gap.

  const framesPerSecond = 12.5; // Qwen3-TTS's codec: 1920 samples at 24 kHz a frame
  const voice = { ctx: null, next: 0, sources: new Set(), speaker: null, available: false };
  // What the page scheduled for playback, for tests and the curious.
  const voiceHook = window.siskinVoice = { sessions: 0, open: 0, pieces: 0, chunks: 0, bytes: 0, samples: 0, duringAnswer: 0, errors: [] };

  function wsURL() {
    return (location.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + location.host + api('v1/audio/speech/stream');
  }

  // A browser cannot set Authorization on a WebSocket, so the key travels
  // as a subprotocol (base64url: any key is a valid token that way).
  function wsProtocols() {
    const k = apiKey();
    if (!k) return [];
    const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(k))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    return ['siskin.speech', 'siskin.api-key.' + b64];
  }

  function audioContext() {
    if (!voice.ctx) voice.ctx = new AudioContext();
    if (voice.ctx.state === 'suspended') voice.ctx.resume();
    return voice.ctx;
  }

  function speechConfig() {
    const c = { type: 'session.config', model: $('speech-model').value, stream_audio: true };
    if ($('voice-name').value) c.voice = $('voice-name').value;
    if ($('voice-language').value) c.language = $('voice-language').value;
    const max = num('speech-max', parseFloat);
    if (max > 0) c.max_new_tokens = Math.min(4096, Math.max(2, Math.round(max * framesPerSecond) + 1));
    return c;
  }

  function setVoiceStatus(text) { $('voice-status').textContent = text; }

  // Speaker speaks one message; t0 is when the user asked for it.
  class Speaker {
    constructor(msg, t0) {
      Object.assign(this, { msg, t0, ws: null, opened: false, queue: [], inFlight: 0, ended: false, done: false, rate: 24000, synthMs: 0, audioS: 0, firstAudio: 0, startAt: 0, odd: null });
    }

    // connect opens the session when there is a first piece to say (not
    // before: a model that reasons first could outlast the server's idle
    // timeout).
    connect() {
      this.ws = new WebSocket(wsURL(), wsProtocols());
      this.ws.binaryType = 'arraybuffer';
      this.ws.onopen = () => { this.opened = true; this.ws.send(JSON.stringify(speechConfig())); this.pump(); };
      this.ws.onmessage = (e) => this.receive(e.data);
      this.ws.onclose = (e) => { if (!this.done) this.fail(this.opened ? 'the speech connection closed (' + (e.reason || 'code ' + e.code) + ')' : 'the server refused the speech connection (check the API key)'); };
      voiceHook.sessions++;
      voiceHook.open++;
      setVoiceStatus('Speaking…');
    }

    say(text) { this.queue.push(text); this.pump(); }
    end() { this.ended = true; this.pump(); }

    // pump sends queued pieces, a few ahead of the audio, so the server's
    // queue never overflows on a long answer.
    pump() {
      if (this.done) return;
      if (!this.ws && this.queue.length) this.connect();
      if (!this.ws && this.ended) { this.close(false); return; }
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
      while (this.queue.length && this.inFlight < 4) {
        this.ws.send(JSON.stringify({ type: 'input.text', text: this.queue.shift() }));
        this.ws.send(JSON.stringify({ type: 'input.done' }));
        this.inFlight++;
        voiceHook.pieces++;
      }
      if (this.ended && !this.queue.length && !this.inFlight) this.close(false);
    }

    receive(data) {
      if (typeof data !== 'string') { this.play(data); return; }
      let j;
      try { j = JSON.parse(data); } catch (e) { return; }
      if (j.type === 'audio.start') {
        this.startAt = performance.now();
        this.rate = j.sample_rate || 24000;
      } else if (j.type === 'audio.done') {
        if (this.startAt) this.synthMs += performance.now() - this.startAt;
        this.startAt = 0;
        this.report();
      } else if (j.type === 'session.done') {
        this.inFlight--;
        this.pump();
      } else if (j.type === 'error') {
        this.fail(j.message + (j.param ? ' (field: ' + j.param + ')' : ''));
      }
    }

    // play schedules one PCM chunk (16-bit little-endian mono) right after
    // the audio already scheduled, or a moment from now after a pause.
    play(buf) {
      let bytes = new Uint8Array(buf);
      if (this.odd !== null) bytes = Uint8Array.of(this.odd, ...bytes);
      this.odd = bytes.length & 1 ? bytes[bytes.length - 1] : null;
      const n = bytes.length >> 1;
      if (!n) return;
      const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
      const ctx = audioContext();
      const b = ctx.createBuffer(1, n, this.rate);
      b.copyToChannel(samples, 0);
      const src = ctx.createBufferSource();
      src.buffer = b;
      src.connect(ctx.destination);
      const at = Math.max(voice.next, ctx.currentTime + 0.1);
      src.start(at);
      voice.next = at + b.duration;
      voice.sources.add(src);
      src.onended = () => { voice.sources.delete(src); updateControls(); };
      this.audioS += n / this.rate;
      voiceHook.chunks++;
      voiceHook.bytes += bytes.length;
      voiceHook.samples += n;
      if (running && running.msg === this.msg) voiceHook.duringAnswer++;
      if (!this.firstAudio) {
        this.firstAudio = performance.now();
        this.report();
        updateControls();
      }
    }

    // report writes time to first audio and the real-time factor (time
    // spent making the audio over its length) into the message's stats.
    report() {
      const m = this.msg;
      if (m.role !== 'assistant') return;
      m.stats = m.stats || {};
      if (this.firstAudio) m.stats.first_audio_ms = this.firstAudio - this.t0;
      if (this.audioS > 0 && this.synthMs > 0) {
        m.stats.audio_s = this.audioS;
        m.stats.speech_rtf = this.synthMs / 1000 / this.audioS;
      }
      const li = $('log').children[state.messages.indexOf(m)];
      if (li && !(running && running.msg === m)) {
        fillStats(li.querySelector('.stats'), m);
        save();
      }
    }

    close(cancel) {
      if (this.done) return;
      this.done = true;
      if (this.ws) {
        voiceHook.open--;
        if (this.ws.readyState === WebSocket.OPEN) {
          if (cancel) this.ws.send(JSON.stringify({ type: 'input.cancel' }));
          this.ws.send(JSON.stringify({ type: 'session.close' }));
        }
        this.ws.close();
      }
      if (voice.speaker === this) voice.speaker = null;
      if (!cancel) setVoiceStatus('');
      updateControls();
    }

    fail(why) {
      voiceHook.errors.push(why);
      showBanner('Speech stopped: ' + why);
      setVoiceStatus('Speech stopped: ' + why);
      silence();
    }
  }

  // silence stops the audio now and cancels the server's work.
  function silence() {
    if (voice.speaker) voice.speaker.close(true);
    for (const src of voice.sources) src.stop();
    voice.sources.clear();
    voice.next = 0;
    updateControls();
  }

  const speaking = () => voice.speaker !== null || voice.sources.size > 0;

  function startSpeaker(msg, t0) {
    silence();
    audioContext();
    voice.speaker = new Speaker(msg, t0);
    updateControls();
    return voice.speaker;
  }

  // speakableCut is how much of text can be spoken now: up to the last
  // sentence end or line break, never into an unclosed code block. A run
  // with neither is cut at a clause mark or a space once it is long: soon
  // for the first piece (the voice starts early), later after that.
  function speakableCut(text, first) {
    const fences = [...text.matchAll(/^\s*(```|~~~)/gm)];
    const limit = fences.length % 2 ? fences[fences.length - 1].index : text.length;
    const head = text.slice(0, limit);
    let cut = 0;
    for (const m of head.matchAll(/[.!?。！？](?=\s)|[。！？]|\n/g)) cut = m.index + m[0].length;
    if (cut || head.length < (first ? 40 : 160)) return cut;
    for (const m of head.matchAll(/[,;:，；、](?=\s)|\s/g)) cut = m.index + m[0].length;
    return cut;
  }

  // speechPieces turns Markdown into sentences to say: code blocks and
  // markup left out, one piece a sentence or line, only pieces with a
  // letter or digit.
  function speechPieces(md) {
    const out = [];
    let fence = null;
    for (const raw of md.split('\n')) {
      const f = raw.match(/^\s*(```|~~~)/);
      if (f) { fence = fence ? null : f[1]; continue; }
      if (fence) continue;
      const line = raw
        .replace(/^\s*(#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)/, '')
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/[*_~`|]+/g, '')
        .replace(/\s+/g, ' ').trim();
      for (let s of line.split(/(?<=[.!?。！？])\s+/)) {
        while (s.length > 1000) { out.push(s.slice(0, 1000)); s = s.slice(1000); }
        if (/[\p{L}\p{N}]/u.test(s)) out.push(s);
      }
    }
    return out;
  }

  // feedSpeaker sends what of the streaming answer is ready to be spoken.
  function feedSpeaker(run, final) {
    const sp = run.speaker;
    if (!sp || sp.done) return;
    const text = run.msg.content.slice(run.spoken);
    const cut = final ? text.length : speakableCut(text, run.spoken === 0);
    if (cut > 0) {
      run.spoken += cut;
      for (const piece of speechPieces(text.slice(0, cut))) sp.say(piece);
    }
    if (final) sp.end();
  }

  function readAloud(m) {
    if (!voice.available) return;
    const sp = startSpeaker(m, performance.now());
    const pieces = speechPieces(m.content || '');
    for (const p of pieces) sp.say(p);
    sp.end();
    if (!pieces.length) setVoiceStatus('Nothing to read aloud in this message.');
  }

  // loadVoices fills the voice settings from the speech models listed.
  async function loadVoices(models) {
    voice.available = models.length > 0;
    $('voice').hidden = !voice.available;
    document.body.classList.toggle('has-voice', voice.available);
    if (!voice.available) return;
    const fill = (id, values, key) => {
      const sel = $(id);
      sel.textContent = '';
      for (const v of values) sel.append(new Option(v, v));
      if (values.includes(state.settings[key])) sel.value = state.settings[key];
    };
    fill('speech-model', models.map((m) => m.id), 'speech_model');
    let resp;
    try {
      resp = await fetch(api('v1/audio/voices'), { headers: headers() });
    } catch (e) {
      setVoiceStatus('The voices could not be listed: ' + e.message);
      return;
    }
    if (!resp.ok) { setVoiceStatus('The voices could not be listed: ' + await errorText(resp)); return; }
    const j = await resp.json();
    fill('voice-name', j.voices || [], 'voice');
    const seen = new Set();
    const langs = (j.languages || []).filter((l) => !seen.has(l.toLowerCase()) && seen.add(l.toLowerCase()));
    fill('voice-language', langs, 'language');
  }

  function bindVoice() {
    $('speak').checked = !!state.settings.speak;
    $('speak').addEventListener('change', () => {
      state.settings.speak = $('speak').checked;
      save();
      if (state.settings.speak) audioContext(); // a click: the browser lets audio start
      else silence();
    });
    $('stop-speech').addEventListener('click', () => { silence(); setVoiceStatus(''); $('input').focus(); });
  }

  // ---- wiring ----

  function bindKeyDialog() {
    const dialog = $('key-dialog');
    $('key-form').addEventListener('submit', (e) => {
      e.preventDefault();
      localStorage.setItem(keyKey, $('key-input').value.trim());
      dialog.close();
      loadModels();
    });
    $('key-cancel').addEventListener('click', () => dialog.close());
    $('key-button').addEventListener('click', () => {
      $('key-error').hidden = true;
      $('key-input').value = apiKey();
      dialog.showModal();
    });
  }

  function init() {
    bindSettings();
    bindKeyDialog();
    bindVoice();
    $('composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
    $('input').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && (running || speaking()) && !$('key-dialog').open) stop(); });
    $('stop').addEventListener('click', stop);
    $('regenerate').addEventListener('click', regenerate);
    $('new-chat').addEventListener('click', newChat);
    $('export').addEventListener('click', exportJSON);
    renderAll();
    loadModels();
  }

  init();
})();
