// rcm inspector: reads the proxy's JSON endpoints and its live feed. No
// framework, no build step: this file is served as is from the binary.
"use strict";

// The same colours, in the same order, as the timeline (timeline.go).
const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const pageSize = 30;
const eventsShown = 500;

const state = {
  sessions: new Map(), // id -> session, in list order
  next: "",            // cursor of the next page of sessions
  current: null,       // the open session's view {session, tasks, records, events}
  events: new Map(),   // seq -> event of the open session
  selected: 0,         // seq of the call whose details are open
  colours: new Map(),
  reload: 0,
  relist: 0,
};

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

async function getJSON(url) {
  const resp = await fetch(url, { headers: { Accept: "application/json" } });
  if (!resp.ok) throw new Error(`${url}: ${resp.status}`);
  return { body: await resp.json(), resp };
}

// nextCursor reads the cursor of rel="next" in a Link header.
function nextCursor(link) {
  const m = /<([^>]*)>\s*;\s*rel="next"/.exec(link || "");
  return m ? new URL(m[1], location.href).searchParams.get("after") || "" : "";
}

// loadSessions loads the first page of sessions, or the next one (more),
// or again as many as the list shows (refresh).
async function loadSessions(more, refresh) {
  const limit = refresh ? Math.max(pageSize, state.sessions.size) : pageSize;
  let url = `sessions?limit=${limit}`;
  if (more && state.next) url += `&after=${encodeURIComponent(state.next)}`;
  const { body, resp } = await getJSON(url);
  if (!more) state.sessions.clear();
  for (const s of body) state.sessions.set(s.id, s);
  state.next = nextCursor(resp.headers.get("Link"));
  renderSessions();
}

function renderSessions(flash) {
  const ul = $("#sessions");
  ul.replaceChildren();
  for (const s of state.sessions.values()) {
    const li = el("li", { "data-id": s.id, onclick: () => openSession(s.id) },
      el("div", { class: "id", text: s.id }),
      el("div", { class: "first", title: s.first || "", text: (s.client ? `${s.client} · ` : "") + (s.first || "—") }),
      el("div", { class: "meta", text: `${count(s.tasks || 0, "task")} · ${count(s.calls, "call")} · ${timeAgo(s.updated)}` + (s.parent ? ` · child of ${s.parent}` : "") }));
    if (state.current && state.current.session.id === s.id) li.classList.add("selected");
    if (flash === s.id) li.classList.add("flash");
    ul.append(li);
  }
  $("#more").hidden = !state.next;
  $("#no-sessions").hidden = state.sessions.size > 0;
}

function timeAgo(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return new Date(iso).toLocaleString();
}

async function openSession(id) {
  if (!state.current || state.current.session.id !== id) state.selected = 0;
  const { body } = await getJSON(`sessions/${encodeURIComponent(id)}?events=${eventsShown}`);
  state.current = body;
  history.replaceState(null, "", `?session=${encodeURIComponent(id)}`);
  state.events = new Map((body.events || []).map((e) => [e.seq, e]));
  assignColours();
  $("#empty").hidden = true;
  $("#session").hidden = false;
  renderSessions();
  renderSession();
  renderCalls();
  loadTimeline();
  if (state.selected && state.events.has(state.selected)) showDetail(state.selected);
  else closeDetail();
}

// assignColours gives tasks their colours in order of creation, then tasks
// only events name, as the timeline does.
function assignColours() {
  state.colours = new Map();
  const add = (id) => { if (id && !state.colours.has(id)) state.colours.set(id, palette[state.colours.size % palette.length]); };
  for (const t of state.current.tasks || []) add(t.id);
  for (const e of state.events.values()) add(e.task);
}

const colour = (task) => state.colours.get(task) || "#999";

function chip(task) {
  if (!task) return el("span", { class: "muted", text: "—" });
  const c = el("span", { class: "chip", text: task });
  c.style.background = colour(task);
  return c;
}

function renderSession() {
  const v = state.current;
  $("#session-title").textContent = `Session ${v.session.id}`;
  $("#session-meta").textContent = `${count(v.session.calls, "call")} · ${count((v.tasks || []).length, "task")} · started ${new Date(v.session.created).toLocaleString()} · last call ${timeAgo(v.session.updated)}`;
  const records = new Map((v.records || []).map((r) => [r.task, r]));
  const box = $("#tasks");
  box.replaceChildren();
  if (!(v.tasks || []).length) box.append(el("p", { class: "muted", text: "No tasks yet (native calls and fallbacks create none)." }));
  for (const t of v.tasks || []) {
    const card = el("details", { class: "task-card", "data-task": t.id },
      el("summary", {}, chip(t.id), " ", el("span", { class: "title", text: t.name || "(untitled)" }),
        el("span", { class: "muted", text: ` · ${count(t.turns, "turn")} · since ${new Date(t.created).toLocaleTimeString()}` })),
      el("pre", { text: records.has(t.id) ? recordText(records.get(t.id)) : "(no record yet)" }));
    card.style.borderLeftColor = colour(t.id);
    box.append(card);
  }
}

// recordText lays a task record out as text, in the order the memory
// message puts it.
function recordText(r) {
  const lines = [];
  if (r.workspace) lines.push(`workspace: ${r.workspace}`);
  if (r.requirements && r.requirements.length) {
    lines.push("requirements:");
    r.requirements.forEach((q, i) => lines.push(`  ${i + 1}. ${q.amends ? "(amends) " : ""}${q.text}`));
  }
  if (r.files_changed && r.files_changed.length) lines.push(`files changed: ${r.files_changed.join(", ")}`);
  if (r.files_read && r.files_read.length) lines.push(`files read: ${r.files_read.join(", ")}`);
  if (r.commands && r.commands.length) {
    lines.push("commands:");
    for (const c of r.commands) lines.push(`  $ ${c.cmd}${c.exit != null ? ` (exit ${c.exit})` : ""}`);
  }
  if (r.last_test) lines.push(`last test: ${r.last_test.cmd} → ${r.last_test.outcome || "?"}`);
  if (r.progress && r.progress.length) lines.push("progress:", ...r.progress.map((p) => `  - ${p}`));
  if (r.unfinished && r.unfinished.length) lines.push("unfinished:", ...r.unfinished.map((p) => `  - ${p}`));
  if (r.summary) lines.push("summary:", r.summary);
  lines.push(`(version ${r.version}, updated ${new Date(r.updated).toLocaleTimeString()})`);
  return lines.join("\n");
}

// fallsBack says from which threshold on the call would have fallen back:
// any above its confidence (thresholds go up to 1).
const fallsBack = (e) => (e.confidence >= 1 ? "never" : `> ${e.confidence.toFixed(2)}`);
const pct = (x) => `${Math.round(x * 100)}%`;
const count = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;

function callRow(e, i) {
  const decided = !!e.method;
  const tr = el("tr", { "data-seq": String(e.seq), onclick: () => showDetail(e.seq) },
    el("td", { text: String(i + 1) }),
    el("td", { text: new Date(e.at).toLocaleTimeString() }),
    el("td", { text: e.kind }),
    el("td", { text: e.mode }),
    el("td", {}, chip(e.task)),
    el("td", { text: decided ? e.confidence.toFixed(2) : "—" }),
    el("td", { text: e.method || "—" }),
    el("td", { class: `fb-${e.fallback}`, text: e.fallback }),
    el("td", { text: decided ? fallsBack(e) : "—" }),
    el("td", { text: `${e.tokens_in} → ${e.tokens_out}` }),
    el("td", { text: e.prefix_share != null ? pct(e.prefix_share) : "—" }));
  if (e.seq === state.selected) tr.classList.add("selected");
  return tr;
}

function renderCalls(flashSeq) {
  const body = $("#calls tbody");
  body.replaceChildren();
  const evs = [...state.events.values()].sort((a, b) => a.seq - b.seq);
  evs.forEach((e, i) => {
    const tr = callRow(e, i);
    if (e.seq === flashSeq) tr.classList.add("flash");
    body.prepend(tr); // newest first
  });
}

async function loadTimeline() {
  const id = state.current.session.id;
  const resp = await fetch(`sessions/${encodeURIComponent(id)}/timeline.svg?events=${eventsShown}`);
  if (!resp.ok || !state.current || state.current.session.id !== id) return;
  // The SVG is rcm's own, every text in it escaped by the server.
  $("#timeline").innerHTML = await resp.text();
  for (const c of document.querySelectorAll("#timeline [data-seq]")) {
    c.style.cursor = "pointer";
    c.addEventListener("click", () => showDetail(Number(c.getAttribute("data-seq"))));
  }
}

function closeDetail() {
  state.selected = 0;
  $("#detail").hidden = true;
  $(".layout").classList.remove("with-detail");
  for (const tr of document.querySelectorAll("#calls tr.selected")) tr.classList.remove("selected");
}

// tokensOf estimates tokens from bytes as the proxy does (4 bytes a token).
const tokensOf = (s) => Math.ceil(new TextEncoder().encode(s).length / 4);

function bar(segments, total) {
  const b = el("div", { class: "bar" });
  for (const s of segments) {
    const seg = el("div", { class: `seg ${s.cls || ""}`, title: s.title });
    seg.style.width = `${(100 * s.tokens) / Math.max(total, 1)}%`;
    if (s.colour) seg.style.background = s.colour;
    b.append(seg);
  }
  return b;
}

function showDetail(seq) {
  const e = state.events.get(seq);
  if (!e) return;
  state.selected = seq;
  for (const tr of document.querySelectorAll("#calls tbody tr")) tr.classList.toggle("selected", Number(tr.dataset.seq) === seq);
  const box = $("#detail-body");
  box.replaceChildren();
  const decided = !!e.method;
  box.append(el("h3", { text: `Call ${[...state.events.keys()].sort((a, b) => a - b).indexOf(seq) + 1} · ${new Date(e.at).toLocaleTimeString()}` }));
  const dl = el("dl", { class: "decision" });
  const row = (k, v) => dl.append(el("dt", { text: k }), el("dd", {}, v));
  row("kind / mode", `${e.kind} / ${e.mode}`);
  row("task", chip(e.task));
  row("confidence", decided ? e.confidence.toFixed(3) : "— (no routing decision)");
  row("method", e.method || "—");
  row("fallback", el("span", { class: `fb-${e.fallback}`, text: e.fallback }));
  if (e.threshold) row("threshold", `${e.threshold.toFixed(2)} in effect`);
  if (decided) row("falls back", e.confidence >= 1 ? "at no threshold" : `at any threshold above ${e.confidence.toFixed(3)}`);
  row("tokens", `${e.tokens_in} received → ${e.tokens_out} forwarded (the whole body, as in the calls table)`);
  row("cached prefix", e.prefix_share != null ? `${pct(e.prefix_share)} of the forwarded messages would be served by the provider's cache: the longest prefix they share with an earlier call of the session still in the cache` : "unknown (no earlier call at hand)");
  box.append(dl);

  const turns = e.turns || [];
  if (turns.length) {
    const recv = [], fwd = [];
    let rtotal = e.system_tokens || 0, ftotal = e.system_tokens || 0;
    if (e.system_tokens) {
      const s = { tokens: e.system_tokens, cls: "system", title: `system: ${e.system_tokens} tokens` };
      recv.push(s); fwd.push(s);
    }
    const perTask = new Map();
    turns.forEach((t, i) => {
      const name = t.task || "(unlabelled)";
      const current = i === turns.length - 1;
      const title = `turn ${i + 1}${current ? " (current)" : ""} · ${name} · ${t.tokens} tokens${t.dropped ? " · dropped" : ""}`;
      const seg = { tokens: t.tokens, colour: colour(t.task), cls: (t.dropped ? "dropped " : "") + (current ? "current" : ""), title };
      recv.push(seg);
      rtotal += t.tokens;
      const p = perTask.get(name) || { turns: 0, recv: 0, fwd: 0, dropped: 0 };
      p.turns++; p.recv += t.tokens;
      if (t.dropped) p.dropped++;
      else { p.fwd += t.tokens; fwd.push({ ...seg, cls: current ? "current" : "" }); ftotal += t.tokens; }
      perTask.set(name, p);
    });
    if (e.record) {
      const rt = tokensOf(JSON.stringify(e.record));
      fwd.splice(fwd.length - 1, 0, { tokens: rt, cls: "record", title: `task record: ${rt} tokens` });
      ftotal += rt;
    }
    const scale = Math.max(rtotal, ftotal);
    box.append(el("h3", { text: "Context, per turn" }),
      el("div", { class: "bar-label received", text: `received: ${rtotal} tokens in ${turns.length} turns${e.system_tokens ? " and the system prompt" : ""}` }), bar(recv, scale),
      el("p", { class: "tokens-note muted", text: tokensNote(e.tokens_in, rtotal) }),
      el("div", { class: "bar-label", text: `forwarded: ${ftotal} tokens (dropped turns greyed above)` }), bar(fwd, scale));
    const legend = el("div", { class: "legend" });
    const sw = (c, text, cls) => { const s = el("span", { class: "swatch " + (cls || "") }); if (c) s.style.background = c; return el("span", {}, s, text); };
    legend.append(sw("#7b8794", "system"), sw("", "record", "record"), sw("#d5d8dc", "dropped"));
    box.append(legend);
    const table = el("table", { class: "per-task" },
      el("thead", {}, el("tr", {}, ...["task", "turns", "dropped", "received", "forwarded"].map((h) => el("th", { text: h })))));
    const tb = el("tbody");
    for (const [name, p] of perTask) {
      tb.append(el("tr", {}, el("td", {}, name === "(unlabelled)" ? name : chip(name)), el("td", { text: String(p.turns) }),
        el("td", { text: String(p.dropped) }), el("td", { text: String(p.recv) }), el("td", { text: String(p.fwd) })));
    }
    table.append(tb);
    box.append(table);
  }
  box.append(el("h3", { text: "Injected record" }));
  box.append(e.record ? el("pre", { class: "record", text: messageText(e.record) }) : el("p", { class: "muted", text: "none" }));
  $("#detail").hidden = false;
  $(".layout").classList.add("with-detail");
}

// tokensNote says how the bars' received tokens relate to the call's: the
// bars hold the messages; the call's count is the whole body's.
function tokensNote(whole, messages) {
  const other = whole - messages;
  if (other === 0) return `The same ${whole} tokens the call received.`;
  if (other > 0) return `Of the ${whole} tokens the call received, the other ${other} are the body's fields besides the messages (tools, options), which no turn holds.`;
  return `The call received ${whole} tokens: each turn's estimate rounds up, so the bars count ${-other} more.`;
}

// messageText returns a chat message's text content.
function messageText(m) {
  const c = m.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => p.text || "").join("\n");
  return JSON.stringify(m, null, 2);
}

// The live feed: each call, as soon as the proxy has stored it.
function connect() {
  const src = new EventSource("feed");
  const live = $("#live");
  let down = false;
  src.onopen = () => {
    live.textContent = "live"; live.className = "live on";
    // Calls made while the feed was down are not replayed: reload.
    if (down) { loadSessions(false); if (state.current) scheduleReload(); }
    down = false;
  };
  src.onerror = () => { down = true; live.textContent = "reconnecting"; live.className = "live off"; };
  src.addEventListener("call", (m) => onCall(JSON.parse(m.data)));
  src.addEventListener("dropped", () => { if (state.current) scheduleReload(); loadSessions(false); });
}

function onCall({ session, event }) {
  const s = state.sessions.get(session);
  const updated = { ...(s || { id: session, created: event.at, tasks: 0 }), updated: event.at, calls: (s ? s.calls : 0) + 1 };
  if (event.client) updated.client = event.client;
  // Its tasks and first request are the server's to say: ask again once
  // the burst has passed.
  clearTimeout(state.relist);
  state.relist = setTimeout(() => loadSessions(false, true), 400);
  // The session moves to the top: the list is ordered by last use.
  state.sessions.delete(session);
  state.sessions = new Map([[session, updated], ...state.sessions]);
  renderSessions(session);
  if (!state.current || state.current.session.id !== session) return;
  if (state.events.has(event.seq)) return;
  state.events.set(event.seq, event);
  state.current.session = updated;
  assignColours();
  renderCalls(event.seq);
  scheduleReload();
}

// scheduleReload refreshes the open session's tasks, records and timeline
// once a burst of calls has passed.
function scheduleReload() {
  clearTimeout(state.reload);
  const id = state.current.session.id;
  state.reload = setTimeout(() => { if (state.current && state.current.session.id === id) openSession(id); }, 400);
}

function start() {
  $("#more").addEventListener("click", () => loadSessions(true));
  $("#close-detail").addEventListener("click", closeDetail);
  const want = new URLSearchParams(location.search).get("session");
  loadSessions(false).then(() => { if (want) openSession(want); }).catch((err) => console.error(err));
  connect();
}

start();
