// The ragqa web page: Ask/Chat, Papers and Summary over the JSON API of `ragqa serve`.
// No framework, no build step, nothing fetched from another host. Every piece of text that comes
// from the server (titles, abstracts, answers) enters the page through textContent or text
// nodes, never through innerHTML: a title holding "<script>" shows as those characters.
"use strict";

const TOKEN_KEY = "ragqa-token";
const PAGE_SIZE = 50;
// [1], [1, 2], [2-4]: the citation forms the answer checker writes (README, "Citation check").
const CITATION = /\[(\d+(?:\s*[-–,]\s*\d+)*)\]/g;

const state = {
  sessionId: null,   // the chat session, kept for this page; "New chat" forgets it
  sessionSecret: null,  // what the session's first turn returned: later turns send it
  llm: false,  // the server writes answers with an LLM (its health says so)
  busy: null,        // the AbortController of the answer being streamed
  offset: 0,
  total: 0,
  summaryMarkdown: "",
  summaryTopic: "",
  panelOpener: null, // the element to give focus back to when the panel closes
  map: null,         // the PaperMap of the Map view, drawn when first shown
  mapHighlight: null, // {question, ids}: the papers of the latest list answer
  auth: false,
};

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(message) {
  const line = $("error");
  line.textContent = message;
  line.hidden = !message;
}

// ------------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

async function errorOf(response) {
  let message = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") message = body.error;
  } catch (_) { /* not JSON: keep the status */ }
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    askToken("The token was refused: enter it again.");
  }
  return new ApiError(message, response.status);
}

async function request(path, { body, signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError("The server does not answer: is `ragqa serve` running?", 0);
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

async function getJson(path, options) {
  return (await request(path, options)).json();
}

// Server-Sent Events over a POST: EventSource cannot POST, so read the body as a stream and
// split it into events ("event: name" and "data: json" lines, a blank line between events).
async function streamEvents(path, body, signal, onEvent) {
  const response = await request(path, { body, signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      // Lines may end in CRLF (sse-starlette writes them so); a CR at a chunk's end may be
      // the first half of one, so it waits for the next chunk.
      const held = !done && buffer.endsWith("\r") ? "\r" : "";
      buffer = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, "\n") + held;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, cut), onEvent);
        buffer = buffer.slice(cut + 2);
      }
      if (done) break;
    }
    if (buffer.trim()) dispatch(buffer, onEvent);
  } finally {
    reader.cancel().catch(() => {});
  }
}

function dispatch(block, onEvent) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;  // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return;
  onEvent(name, JSON.parse(data.join("\n")));
}

// ------------------------------------------------------------------ the token

function askToken(message) {
  const dialog = $("token-dialog");
  $("token-error").textContent = message || "";
  $("token-error").hidden = !message;
  $("token-input").value = "";
  if (!dialog.open) dialog.showModal();
  $("token-input").focus();
}

async function submitToken(event) {
  event.preventDefault();
  const token = $("token-input").value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    // Any route that needs the token tells whether it is right.
    const response = await fetch("api/papers?offset=0&limit=1", { headers: headers(false) });
    if (response.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      askToken("That token was refused.");
      return;
    }
  } catch (_) {
    askToken("The server does not answer.");
    return;
  }
  $("token-dialog").close();
  showError("");
  loadPapers(0);
}

// ------------------------------------------------------------------ health and views

async function loadHealth() {
  try {
    const health = await getJson("api/health");
    const mode = health.mode === "llm" ? `LLM: ${health.llm_model || "model"}` : "extractive";
    $("mode").textContent = mode;
    state.llm = health.mode === "llm";
    $("mode").title = health.mode === "llm"
      ? "Answers are written by the configured LLM; citations are checked"
      : "No LLM configured: answers quote the papers' own sentences";
    $("collection").textContent = `${health.collection} · ${health.papers} papers`;
    state.auth = Boolean(health.auth);
    if (state.auth && !sessionStorage.getItem(TOKEN_KEY)) askToken("");
    else loadPapers(0);
  } catch (err) {
    $("mode").textContent = "offline";
    showError(err.message);
  }
}

function showView(name, { focus = true } = {}) {
  for (const tab of document.querySelectorAll(".view-tab")) {
    if (tab.dataset.view === name) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${name}`;
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  if (focus) {
    const first = { ask: "question", papers: "search-q", summary: "topic", map: "map-find" }[name];
    $(first).focus();
  }
  if (name === "map") showMap();
}

// ------------------------------------------------------------------ answers as DOM

// The answer text is light Markdown (paragraphs, "- " items, "> " quotes, **bold**) with [n]
// citations; it becomes elements here, each piece of text a text node.
function renderRichText(text, cite) {
  const container = el("div", { class: "answer-text" });
  for (const block of text.split(/\n\s*\n/)) {
    // A block may mix kinds ("Also relevant:" then its "- " items): each run of lines of one
    // kind becomes its own element, so that no item shows a literal "- ".
    let run = [];
    let kind = null;
    for (const line of block.split("\n").filter((l) => l.trim())) {
      const lineKind = /^\s*[-*] /.test(line) ? "list" : /^\s*>/.test(line) ? "quote" : "text";
      if (lineKind !== kind && run.length) container.append(renderRun(kind, run, cite));
      if (lineKind !== kind) run = [];
      kind = lineKind;
      run.push(line);
    }
    if (run.length) container.append(renderRun(kind, run, cite));
  }
  return container;
}

function renderRun(kind, lines, cite) {
  if (kind === "list") {
    const list = el("ul");
    for (const line of lines) list.append(inline(el("li"), line.replace(/^\s*[-*] /, ""), cite));
    return list;
  }
  if (kind === "quote") {
    return inline(el("blockquote"), lines.map((line) => line.replace(/^\s*> ?/, "")).join(" "),
      cite);
  }
  const para = el("p");
  lines.forEach((line, i) => {
    if (i) para.append(el("br"));
    inline(para, line, cite);
  });
  return para;
}

function inline(parent, text, cite) {
  // **bold** first, then the citations inside each piece.
  text.split(/(\*\*[^*]+\*\*)/).forEach((piece) => {
    if (/^\*\*[^*]+\*\*$/.test(piece)) parent.append(citations(el("strong"), piece.slice(2, -2), cite));
    else citations(parent, piece, cite);
  });
  return parent;
}

function citations(parent, text, cite) {
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    parent.append(text.slice(last, match.index));
    // One unbreakable group, so that "[" never ends a line with its numbers on the next.
    const group = el("span", { class: "cites" }, "[");
    match[1].split(/\s*,\s*/).forEach((part, i) => {
      if (i) group.append(", ");
      const range = part.split(/\s*[-–]\s*/).map(Number);
      const numbers = range.length === 2 && range[1] >= range[0] && range[1] - range[0] < 50
        ? Array.from({ length: range[1] - range[0] + 1 }, (_, j) => range[0] + j)
        : [range[0]];
      numbers.forEach((n, j) => {
        if (j) group.append("–");
        group.append(cite(n, text.slice(last, match.index)));
      });
    });
    group.append("]");
    parent.append(group);
    last = match.index + match[0].length;
  }
  parent.append(text.slice(last));
  return parent;
}

function citationButton(n, paper, quote) {
  if (!paper) return document.createTextNode(String(n));
  return el("button", {
    type: "button", class: "cite", "data-n": n, "data-paper": paper.paper_id,
    "aria-label": `Source ${n}: ${paper.title}`, title: paper.title,
    onclick: (event) => openPaper(paper.paper_id, quote, event.currentTarget),
  }, String(n));
}

function paperLine(paper, quote, number) {
  const button = el("button", {
    type: "button", class: "link", "data-paper": paper.paper_id,
    onclick: (event) => openPaper(paper.paper_id, quote, event.currentTarget),
  }, paper.title || paper.paper_id);
  const meta = el("span", { class: "muted meta" }, [paper.source, `id ${paper.paper_id}`]
    .filter(Boolean).join(" · "));
  return el("li", { value: number || null }, button, " ", meta);
}

function renderAnswer(turn, answer) {
  const byNumber = new Map(answer.citations.map((c) => [c.n, c]));
  const body = turn.querySelector(".answer");
  body.replaceChildren();
  // The frames come with the answer, in the question's language (ragqa/messages.py); the
  // English ones are for a server older than `labels`.
  const labels = answer.labels || {};
  // Chinese frames (and a Chinese written answer) get the right fonts and line breaking.
  if (answer.language === "Chinese") body.lang = "zh-Hans"; else body.removeAttribute("lang");
  const mode = answer.mode === "llm" && answer.model ? `LLM: ${answer.model}` : answer.mode;
  body.append(el("p", { class: "answer-mode muted" }, labels.answer || `Answer (${mode})`));
  if (answer.standalone_question && answer.standalone_question !== answer.question) {
    body.append(el("p", { class: "standalone muted" }, `→ ${answer.standalone_question}`));
  }
  body.append(renderRichText(answer.answer, (n) => {
    const c = byNumber.get(n);
    return citationButton(n, c, c && c.quote);
  }));
  // A list's less certain papers (tier "tail"), folded under the answer: one click opens them.
  const tail = (answer.papers || []).filter((p) => p.tier === "tail"
    && !answer.citations.some((c) => c.paper_id === p.paper_id));
  if (tail.length) {
    body.append(el("details", { class: "tail" },
      el("summary", {}, labels.folded || `${tail.length} more, less certain`),
      el("ul", { class: "refs-list" }, ...tail.map((p) => paperLine(p, p.sentence)))));
  }
  if (answer.notice) body.append(el("p", { class: "notice" }, answer.notice));
  if (answer.unsupported && answer.unsupported.length) {
    body.append(el("p", { class: "notice" },
      labels.unsupported ||
      `⚠ ${answer.unsupported.length} sentence(s) are only weakly supported by the papers they cite.`));
    // Each one named, as the terminal does: a sentence whose citation was dropped included.
    const list = el("ul", { class: "unsupported" });
    for (const item of answer.unsupported) {
      const figures = item.numbers && item.numbers.length
        ? ` (${labels.figures || "figures no cited abstract states"}: ${item.numbers.join(", ")})`
        : "";
      list.append(el("li", {}, `⚠ ${item.sentence}${figures}`));
    }
    body.append(list);
  }
  if (answer.citations.length) {
    const refs = el("ol", { class: "refs-list" });
    for (const c of answer.citations) refs.append(paperLine(c, c.quote, c.n));
    const heading = labels.references || "References";
    const section = el("section", { class: "refs", "aria-label": heading },
      el("h3", {}, heading), refs);
    body.append(section);
    if (answer.citations.length > 1) addMarks(section, answer.citations);
  } else if (answer.closest && answer.closest.length) {
    const list = el("ul", { class: "refs-list closest" });
    for (const p of answer.closest) list.append(paperLine(p, ""));
    const heading = labels.closest || "Closest matches (not cited)";
    body.append(el("section", { class: "refs", "aria-label": heading },
      el("h3", {}, heading), list));
  }
}

// ------------------------------------------------------------------ marks

// The user as the judge: each reference of the latest list can be marked as fitting the
// question or not; "Update the list" sends the marks as a chat turn ("/more 2 5 /not 3"), and
// the server re-ranks the list by them and extends it (ragqa/screening/feedback.py). Marks
// always name the last list, so only the latest answer carries them.
function addMarks(section, citations) {
  document.querySelectorAll(".marks-bar, .mark").forEach((node) => node.remove());
  const marks = new Map();
  const update = el("button", { type: "button", class: "primary update-list", disabled: true,
    onclick: () => {
      const more = [...marks].filter(([, v]) => v === "more").map(([n]) => n);
      const not = [...marks].filter(([, v]) => v === "not").map(([n]) => n);
      const message = [more.length ? "/more " + more.join(" ") : "",
        not.length ? "/not " + not.join(" ") : ""].filter(Boolean).join(" ");
      if (message && !state.busy) sendTurn(message, null);
    } }, "Update the list");
  const hint = el("span", { class: "muted" },
    "Mark the papers that fit (✓) or not (✗), then update: the list is re-ranked by your marks.");
  section.append(el("p", { class: "marks-bar" }, update, " ", hint));
  const items = section.querySelectorAll(".refs-list > li");
  citations.forEach((c, i) => {
    const item = items[i];
    if (!item) return;
    for (const [kind, label, sign] of [["more", "fits", "✓"], ["not", "does not fit", "✗"]]) {
      const button = el("button", { type: "button", class: `mark mark-${kind}`,
        "aria-pressed": "false", "data-n": c.n, "aria-label": `[${c.n}] ${label}`,
        title: label,
        onclick: () => {
          const on = marks.get(c.n) !== kind;
          if (on) marks.set(c.n, kind); else marks.delete(c.n);
          item.querySelectorAll(".mark").forEach((b) => b.setAttribute("aria-pressed",
            String(on && b.classList.contains(`mark-${kind}`))));
          update.disabled = marks.size === 0;
        } }, sign);
      item.prepend(button, " ");
    }
  });
}

// ------------------------------------------------------------------ Ask / Chat

async function ask(event) {
  event.preventDefault();
  const box = $("question");
  const message = box.value.trim();
  if (!message || state.busy) return;
  box.value = "";
  await sendTurn(message, null);
}

// One chat turn; `llm` "none" asks for the extractive answer (offered when the LLM failed).
async function sendTurn(message, llm) {
  showError("");
  $("thread-empty").hidden = true;
  const live = el("p", { class: "streaming" }, "Searching the papers…");
  const turn = el("li", { class: "turn" },
    el("p", { class: "question" }, message),
    el("div", { class: "answer", "aria-busy": "true" }, live));
  $("thread").append(turn);
  turn.scrollIntoView({ block: "end" });
  const controller = new AbortController();
  state.busy = controller;
  $("ask-submit").disabled = true;
  let streamed = "";
  let finished = false;
  try {
    const body = { message, stream: true };
    if (llm) body.llm = llm;
    if (state.sessionId) {
      body.session_id = state.sessionId;
      body.session_secret = state.sessionSecret;
    }
    await streamEvents("api/chat", body, controller.signal, (name, data) => {
      if (name === "token") {
        streamed += data.text || "";
        live.textContent = streamed;
      } else if (name === "screening") {
        // the model reads the candidates of a list before it writes
        live.textContent = `Screening: the model has read ${data.screened} of ` +
          `~${data.expected} candidates…`;
      } else if (name === "answer") {
        finished = true;
        if (data.session_id) state.sessionId = data.session_id;
        if (data.session_secret) state.sessionSecret = data.session_secret;
        renderAnswer(turn, data);
        rememberList(message, data);
      } else if (name === "error") {
        throw new ApiError(data.error || "the answer failed", 500);
      }
    });
    if (!finished) throw new ApiError("The answer stopped before it was complete.", 0);
  } catch (err) {
    if (err.name === "AbortError") {
      turn.querySelector(".answer").replaceChildren(el("p", { class: "muted" }, "Cancelled."));
    } else {
      const failed = [el("p", { class: "error" }, err.message)];
      if (state.llm && llm !== "none") {
        // The LLM failed: the question can still be answered from the abstracts, quoted.
        failed.push(el("button", { type: "button", class: "extractive-retry",
          onclick: () => { if (!state.busy) sendTurn(message, "none"); } },
          "Answer without the LLM"));
      }
      turn.querySelector(".answer").replaceChildren(...failed);
      showError(err.message);
    }
  } finally {
    turn.querySelector(".answer").removeAttribute("aria-busy");
    state.busy = null;
    $("ask-submit").disabled = false;
    turn.scrollIntoView({ block: "nearest" });
  }
}

function newChat() {
  if (state.busy) state.busy.abort();
  state.sessionId = null;
  state.sessionSecret = null;
  $("thread").replaceChildren();
  $("thread-empty").hidden = false;
  showError("");
  $("question").focus();
}

// ------------------------------------------------------------------ the paper panel

// Where `quote` lies in `text`. Quotes are abstract sentences with Markdown and LaTeX read as
// text ("$2.13\times$" is quoted "2.13×"), so when the quote is not found as it is, both are
// compared on their letters and digits only, LaTeX commands skipped, and the match is mapped
// back to the abstract's own characters. Returns [start, end) or null.
function findQuote(text, quote) {
  if (!quote) return null;
  const exact = text.indexOf(quote);
  if (exact >= 0) return [exact, exact + quote.length];
  const a = skeleton(text, true);
  const q = skeleton(quote, false).chars;
  if (q.length < 8) return null;
  const at = a.chars.indexOf(q);
  if (at < 0) return null;
  const start = a.positions[at];
  let end = a.positions[at + q.length - 1] + 1;
  // Take in the closing marks and the full stop that end the sentence ("**", "$", ".").
  while (end < text.length && /[^\s\w]/.test(text[end]) && !/[([{]/.test(text[end])) end += 1;
  return [start, end];
}

const SUPERSCRIPT = { "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6",
  "⁷": "7", "⁸": "8", "⁹": "9" };

function skeleton(text, skipCommands) {
  let chars = "";
  const positions = [];
  for (let i = 0; i < text.length; i += 1) {
    if (skipCommands && text[i] === "\\" && /[a-zA-Z]/.test(text[i + 1] || "")) {
      while (/[a-zA-Z]/.test(text[i + 1] || "")) i += 1;
      continue;
    }
    const c = SUPERSCRIPT[text[i]] || text[i].toLowerCase();
    if (/[a-z0-9]/.test(c)) {
      chars += c;
      positions.push(i);
    }
  }
  return { chars, positions };
}

async function openPaper(paperId, quote, opener) {
  state.panelOpener = opener || document.activeElement;
  const panel = $("panel");
  $("panel-title").textContent = "Loading…";
  for (const id of ["panel-meta", "panel-link", "panel-abstract", "panel-note"]) {
    $(id).replaceChildren();
  }
  panel.hidden = false;
  document.body.classList.add("panel-open");
  $("panel-close").focus();
  try {
    const paper = await getJson(`api/papers/${encodeURIComponent(paperId)}`);
    $("panel-title").textContent = paper.title || paper.paper_id;
    $("panel-meta").textContent = [paper.authors, [paper.venue, paper.year].filter(Boolean).join(" "),
      paper.source, `id ${paper.paper_id}`].filter(Boolean).join(" · ");
    if (/^https?:\/\//i.test(paper.url || "")) {
      $("panel-link").append(el("a", { href: paper.url, rel: "noopener noreferrer", target: "_blank" },
        paper.url));
    }
    const abstract = $("panel-abstract");
    const span = findQuote(paper.text, quote);
    if (span) {
      const mark = el("mark", {}, paper.text.slice(span[0], span[1]));
      abstract.append(paper.text.slice(0, span[0]), mark, paper.text.slice(span[1]));
      mark.scrollIntoView({ block: "center" });
      $("panel-note").textContent = "Highlighted: the sentence the answer quotes.";
    } else {
      abstract.textContent = paper.text;
    }
  } catch (err) {
    $("panel-title").textContent = "Paper not available";
    $("panel-note").textContent = err.message;
  }
}

function closePanel() {
  const panel = $("panel");
  if (panel.hidden) return;
  panel.hidden = true;
  document.body.classList.remove("panel-open");
  const opener = state.panelOpener;
  state.panelOpener = null;
  if (opener && document.contains(opener)) opener.focus();
}

// ------------------------------------------------------------------ Papers

async function loadPapers(offset) {
  try {
    const page = await getJson(`api/papers?offset=${offset}&limit=${PAGE_SIZE}`);
    state.offset = page.offset;
    state.total = page.total;
    const list = $("paper-list");
    list.replaceChildren();
    list.start = page.offset + 1;
    for (const paper of page.papers) list.append(paperItem(paper, ""));
    showTail([]);
    const last = page.offset + page.papers.length;
    $("papers-info").textContent = page.total
      ? `Papers ${page.offset + 1}–${last} of ${page.total}`
      : "This collection holds no papers yet (ragqa ingest PATH adds them).";
    $("pager").hidden = page.total <= PAGE_SIZE;
    $("page-prev").disabled = page.offset === 0;
    $("page-next").disabled = last >= page.total;
    $("search-clear").hidden = true;
  } catch (err) {
    if (err.status !== 401) showError(err.message);
  }
}

function paperItem(paper, sentence) {
  const title = el("button", {
    type: "button", class: "link paper-title", "data-paper": paper.paper_id,
    onclick: (event) => openPaper(paper.paper_id, sentence, event.currentTarget),
  }, paper.title || paper.paper_id);
  const meta = [paper.source, [paper.venue, paper.year].filter(Boolean).join(" "),
    `id ${paper.paper_id}`].filter(Boolean).join(" · ");
  const item = el("li", { class: "paper" }, title, el("p", { class: "muted meta" }, meta));
  if (sentence) item.append(el("p", { class: "best-sentence" }, sentence));
  else if (paper.text) item.append(el("p", { class: "snippet" }, snippet(paper.text)));
  return item;
}

function showTail(tail) {
  const fold = $("paper-tail");
  fold.hidden = !tail.length;
  fold.open = false;
  fold.querySelector("summary").textContent = `${tail.length} more, less certain`;
  fold.querySelector("ol").replaceChildren(
    ...tail.map((hit) => paperItem(hit, hit.best_sentence || "")));
}

function snippet(text) {
  return text.length > 220 ? text.slice(0, 220).replace(/\s+\S*$/, "") + " …" : text;
}

async function search(event) {
  event.preventDefault();
  const question = $("search-q").value.trim();
  if (!question) return;
  showError("");
  $("papers-info").textContent = "Searching…";
  try {
    const found = await getJson("api/search", { body: { question } });
    const list = $("paper-list");
    list.replaceChildren();
    list.start = 1;
    // A list's less certain papers (tier "tail") are folded below it, as in an answer; a
    // topic the list decision doubts has only those.
    const core = found.results.filter((hit) => hit.tier !== "tail");
    const tail = found.results.filter((hit) => hit.tier === "tail");
    for (const hit of core) list.append(paperItem(hit, hit.best_sentence || ""));
    showTail(tail);
    $("papers-info").textContent = core.length
      ? `${core.length} of ${found.total_papers} papers match “${found.query}”`
      : tail.length
        ? `No paper of the ${found.total_papers} is clearly about “${found.query}”.`
        : `No paper of the ${found.total_papers} matches “${found.query}”.`;
    $("pager").hidden = true;
    $("search-clear").hidden = false;
  } catch (err) {
    $("papers-info").textContent = "";
    if (err.status !== 401) showError(err.message);
  }
}

// ------------------------------------------------------------------ Summary

async function summarize(event) {
  event.preventDefault();
  const all = $("summary-all").checked;
  const topic = $("topic").value.trim();
  if (!all && !topic) {
    showError("Give a topic, or tick “whole collection”.");
    $("topic").focus();
    return;
  }
  showError("");
  $("summary-submit").disabled = true;
  $("summary-info").textContent = "Summarizing…";
  try {
    const summary = await getJson("api/summarize", { body: all ? { all: true } : { topic } });
    renderSummary(summary);
    $("summary-info").textContent = "";
  } catch (err) {
    $("summary-info").textContent = "";
    if (err.status !== 401) showError(err.message);
  } finally {
    $("summary-submit").disabled = false;
  }
}

function renderSummary(summary) {
  const refs = new Map(summary.references.map((r) => [r.n, r]));
  state.summaryMarkdown = summary.markdown || "";
  state.summaryTopic = summary.topic || "collection";
  const labels = summary.labels || {};
  if (summary.language === "Chinese") $("summary-out").lang = "zh-Hans";
  else $("summary-out").removeAttribute("lang");
  $("summary-title").textContent = labels.title || (summary.topic ? `Summary: ${summary.topic}`
    : "Summary of the collection");
  $("summary-refs-heading").textContent = labels.references || "References";
  $("summary-notice").textContent = summary.notice || "";
  $("summary-notice").hidden = !summary.notice;
  $("summary-overview").textContent = summary.overview || "";
  renderTrend(summary.trend);
  const themes = $("summary-themes");
  themes.replaceChildren();
  for (const theme of summary.themes) {
    themes.append(el("section", { class: "theme" },
      el("h4", {}, theme.heading
        || `${theme.name} (${theme.size} ${theme.size === 1 ? "paper" : "papers"})`),
      renderRichText(theme.text, (n, before) => citationButton(n, refs.get(n), quoteBefore(before)))));
  }
  const list = $("summary-refs");
  list.replaceChildren();
  for (const r of summary.references) list.append(paperLine(r, "", r.n));
  $("download-md").disabled = !state.summaryMarkdown;
  $("summary-out").hidden = false;
}

// In a summary paragraph each paper's sentence comes right before its citation
// ("**DVPD**: To bridge this gap, we propose DVPD … [2]"): that sentence is the one to highlight.
function quoteBefore(text) {
  const sentence = text.replace(/^[\s:;,.]+/, "").trim();
  return sentence.length > 12 ? sentence : "";
}

function downloadMarkdown() {
  if (!state.summaryMarkdown) return;
  const blob = new Blob([state.summaryMarkdown], { type: "text/markdown;charset=utf-8" });
  const url = URL.createObjectURL(blob);
  const name = state.summaryTopic.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  const link = el("a", { href: url, download: `summary-${name || "collection"}.md`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ------------------------------------------------------------------ Map

// A list answer's papers (its citations) are what the Map view highlights next.
function rememberList(question, answer) {
  const ids = (answer.citations || []).map((c) => c.paper_id);
  if (ids.length > 1) state.mapHighlight = { question, ids };
}

function mapInfo() {
  const data = state.map && state.map.data;
  if (!data) return "";
  const parts = [`${data.papers.toLocaleString()} papers in ${data.themes.length} themes`];
  if (state.mapHighlight && state.map.highlighted.size) {
    parts.push(`ringed: the ${state.map.highlighted.size} papers of “${state.mapHighlight.question}”`);
  }
  parts.push("hover for a title, click to open a paper, drag to pan, scroll to zoom");
  return parts.join(" · ");
}

async function showMap() {
  if (!state.map) {
    $("map-info").textContent = "Drawing the map (a large collection's first map takes minutes)…";
    try {
      const data = await getJson("api/map", { body: {} });
      if (state.map) return; // drawn meanwhile
      state.map = new PaperMap($("map-stage"), data, {
        onOpen: (paperId) => openPaper(paperId, "", $("map-stage")),
      });
      state.map.buildLegend($("map-legend"));
    } catch (err) {
      $("map-info").textContent = "";
      if (err.status !== 401) showError(err.message);
      return;
    }
  }
  state.map.resize();
  const marked = state.map.setHighlight(state.mapHighlight ? state.mapHighlight.ids : []);
  $("map-clear").hidden = !marked;
  $("map-info").textContent = mapInfo();
}

// A topic's papers per year as bars (an SVG built from elements, no markup from the server).
function renderTrend(trend, figureId = "summary-trend") {
  const figure = $(figureId);
  for (const old of figure.querySelectorAll("svg")) old.remove();
  if (!trend || !trend.years.length) { figure.hidden = true; return; }
  const ns = "http://www.w3.org/2000/svg";
  const width = 640, height = 200, pad = 28;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const top = Math.max(...trend.years.map((y) => y.share || 0)) || 1;
  const step = (width - 2 * pad) / trend.years.length;
  trend.years.forEach((row, i) => {
    if (row.share === null) return;  // no papers of that year in the collection: a gap
    const h = (height - 2 * pad) * (row.share / top);
    const bar = document.createElementNS(ns, "rect");
    bar.setAttribute("x", pad + i * step + 1);
    bar.setAttribute("y", height - pad - h);
    bar.setAttribute("width", Math.max(1, step - 2));
    bar.setAttribute("height", h);
    bar.setAttribute("class", "trend-bar");
    const tip = document.createElementNS(ns, "title");
    tip.textContent = `${row.year}: ${row.papers} of ${row.collection} papers (${(100 * row.share).toFixed(1)}%)`;
    bar.append(tip);
    svg.append(bar);
    if (trend.years.length <= 16) {
      const value = document.createElementNS(ns, "text");
      value.setAttribute("x", pad + i * step + step / 2);
      value.setAttribute("y", height - pad - h - 4);
      value.setAttribute("text-anchor", "middle");
      value.setAttribute("class", "trend-label");
      value.textContent = `${(100 * row.share).toFixed(row.share < 0.1 ? 1 : 0)}%`;
      svg.append(value);
    }
    if (trend.years.length <= 16 || i % Math.ceil(trend.years.length / 16) === 0) {
      const label = document.createElementNS(ns, "text");
      label.setAttribute("x", pad + i * step + step / 2);
      label.setAttribute("y", height - pad + 14);
      label.setAttribute("text-anchor", "middle");
      label.setAttribute("class", "trend-label");
      label.textContent = String(row.year);
      svg.append(label);
    }
  });
  svg.setAttribute("aria-label", `Share of each year's papers on ${trend.topic}`);
  figure.prepend(svg);
  for (const old of figure.querySelectorAll("table")) old.remove();
  if (trend.venues && trend.venues.length) figure.append(venueTable(trend));
  const apart = trend.without_year.papers ? `; ${trend.without_year.papers} without a year` : "";
  $(`${figureId}-caption`).textContent = `${trend.papers} papers on “${trend.topic}”: their ` +
    `share of each year's papers (hover a bar for the counts)${apart}.`;
  figure.hidden = false;
}

// A trend split by venue: a row per venue, its papers on the topic against its own papers, and
// the years it has papers on the topic.
function venueTable(trend) {
  const table = el("table", { class: "trend-venues" },
    el("thead", {}, el("tr", {}, ...["venue", "papers", "of its", "share", "years with papers"]
      .map((h) => el("th", { scope: "col" }, h)))));
  const body = el("tbody", {});
  for (const v of trend.venues) {
    const years = v.years.filter((row) => row.papers).map((row) => row.year);
    const span = years.length ? `${years[0]}–${years[years.length - 1]} (${years.length})` : "—";
    body.append(el("tr", {}, el("td", {}, v.venue || "(no venue)"), el("td", {}, String(v.papers)),
      el("td", {}, String(v.collection)),
      el("td", {}, v.collection ? `${(100 * v.papers / v.collection).toFixed(1)}%` : "—"),
      el("td", {}, span)));
  }
  table.append(body);
  return table;
}

async function showTrend(event) {
  event.preventDefault();
  const topic = $("trend-topic").value.trim();
  if (!topic) return;
  showError("");
  $("trend-submit").disabled = true;
  try {
    renderTrend(await getJson("api/trends", {
      body: { topic, by_venue: $("trend-by-venue").checked } }), "map-trend");
  } catch (err) {
    $("map-trend").hidden = true;
    if (err.status !== 401) showError(err.message);
  } finally {
    $("trend-submit").disabled = false;
  }
}

// ------------------------------------------------------------------ wiring

function start() {
  for (const tab of document.querySelectorAll(".view-tab")) {
    tab.addEventListener("click", () => showView(tab.dataset.view));
  }
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("new-chat").addEventListener("click", newChat);
  $("search-form").addEventListener("submit", search);
  $("search-clear").addEventListener("click", () => {
    $("search-q").value = "";
    loadPapers(0);
  });
  $("page-prev").addEventListener("click", () => loadPapers(Math.max(0, state.offset - PAGE_SIZE)));
  $("page-next").addEventListener("click", () => loadPapers(state.offset + PAGE_SIZE));
  $("summary-form").addEventListener("submit", summarize);
  $("summary-all").addEventListener("change", () => { $("topic").disabled = $("summary-all").checked; });
  $("download-md").addEventListener("click", downloadMarkdown);
  $("panel-close").addEventListener("click", closePanel);
  $("token-form").addEventListener("submit", submitToken);
  $("token-dialog").addEventListener("cancel", (event) => event.preventDefault());
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("token-dialog").open) closePanel();
  });
  const view = location.hash.slice(1);
  $("map-find").addEventListener("input", (event) => {
    if (!state.map) return;
    const n = state.map.search(event.target.value);
    $("map-info").textContent = event.target.value.trim() ? `${n} titles match` : mapInfo();
  });
  $("map-form").addEventListener("submit", (event) => event.preventDefault());
  $("trend-form").addEventListener("submit", showTrend);
  $("map-zoom-in").addEventListener("click", () => state.map && state.map.zoom(1.5));
  $("map-zoom-out").addEventListener("click", () => state.map && state.map.zoom(1 / 1.5));
  $("map-reset").addEventListener("click", () => state.map && state.map.reset());
  $("map-clear").addEventListener("click", () => {
    state.mapHighlight = null;
    showMap();
  });
  showView(["ask", "papers", "summary", "map"].includes(view) ? view : "ask", { focus: false });
  loadHealth();
}

document.addEventListener("DOMContentLoaded", start);
