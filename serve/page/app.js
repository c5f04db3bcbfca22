/*
 * serve/page/app.js - the page of `aptix serve`: draws the DAG of the
 * workspace's conversations (forks as branches, failed turns marked),
 * shows a turn when clicked, and runs turns (continue, fork, rerun) with
 * the answer streaming in. Plain JavaScript, no library, no build step;
 * it talks to the server it came from only.
 *
 * The token comes in the URL's fragment (#token=..., never sent to the
 * server), is kept in sessionStorage and sent as a bearer token. Text
 * from the store is only ever set as textContent.
 */
"use strict";

const PAGE = 100;		/* conversations per page */
const LANE = 22, ROW = 26, X0 = 16, Y0 = 18;
const SVG = "http://www.w3.org/2000/svg";

const state = {
	token: null,
	cursors: [null],	/* the cursor of each page seen */
	page: 0,
	graph: null,
	selected: null,		/* the full view of the selected turn */
	running: null,		/* the conversation of the running turn */
	deltas: 0
};
window.aptix = state;		/* for tests and the curious */

const $ = (id) => document.getElementById(id);

function setStatus(text) {
	$("status").textContent = text;
}

function showLogin() {
	$("login").hidden = false;
}

function initToken() {
	const m = location.hash.match(/token=([0-9A-Za-z]+)/);

	if (m) {
		sessionStorage.setItem("aptix-token", m[1]);
		history.replaceState(null, "", location.pathname);
	}
	state.token = sessionStorage.getItem("aptix-token");
	if (!state.token)
		showLogin();
}

async function api(path, opts) {
	const o = Object.assign({}, opts || {});
	o.headers = Object.assign({ Authorization: "Bearer " + state.token },
				  o.headers || {});
	const r = await fetch(path, o);
	if (r.status === 401) {
		showLogin();
		throw new Error("the server refused the token");
	}
	const ct = r.headers.get("Content-Type") || "";
	const body = ct.startsWith("application/json") ? await r.json() :
		await r.text();
	if (!r.ok)
		throw new Error(body && body.error ? body.error.message :
				"HTTP " + r.status);
	return body;
}

function listQuery() {
	const p = new URLSearchParams();
	const cursor = state.cursors[state.page];

	p.set("limit", String(PAGE));
	if (cursor)
		p.set("cursor", cursor);
	if ($("q").value)
		p.set("q", $("q").value);
	if ($("all").checked)
		p.set("all", "1");
	if ($("archived").checked)
		p.set("archived", "1");
	return p.toString();
}

/* ---- the graph ---- */

function el(name, attrs, parent) {
	const e = document.createElementNS(SVG, name);

	for (const k in attrs)
		e.setAttribute(k, attrs[k]);
	if (parent)
		parent.appendChild(e);
	return e;
}

function cut(s, n) {
	s = (s || "").replace(/\s+/g, " ");
	return s.length > n ? s.slice(0, n - 1) + "\u2026" : s;
}

function nodeClass(n) {
	if (n.failed)
		return "failed";
	return n.turn_status === "completed" ? "completed" : "pending";
}

function draw(g) {
	const svg = $("graph");
	const textX = X0 + Math.max(g.lanes, 1) * LANE + 6;
	const titles = {};
	const seen = {};

	svg.textContent = "";
	for (const c of g.conversations)
		titles[c.id] = c.title || c.id.slice(0, 8);
	svg.setAttribute("width", String(textX + 520));
	svg.setAttribute("height", String(Y0 + g.nodes.length * ROW + 8));
	const x = (lane) => X0 + lane * LANE;
	const y = (row) => Y0 + row * ROW;
	const edges = el("g", {}, svg);
	for (const n of g.nodes) {
		if (n.parent_row === null)
			continue;
		const p = g.nodes[n.parent_row];
		const px = x(p.lane), py = y(p.row);
		const nx = x(n.lane), ny = y(n.row);
		const d = px === nx ? `M${px},${py} L${nx},${ny}` :
			`M${px},${py} C${px},${py + ROW * 0.8} ${nx},` +
			`${py + ROW * 0.2} ${nx},${py + ROW} L${nx},${ny}`;
		el("path", { d: d, class: "edge" }, edges);
	}
	for (const n of g.nodes) {
		const gr = el("g", { class: "node " + nodeClass(n),
				      "data-id": n.id, tabindex: "0" }, svg);
		const t = el("title", {}, gr);
		t.textContent = `${titles[n.conversation] || ""}\n` +
			`${n.summary || ""}\n${n.status} ${n.created || ""}`;
		el("circle", { cx: x(n.lane), cy: y(n.row), r: 7 }, gr);
		if (n.failed) {
			const m = el("text", { x: x(n.lane) - 3.5,
					       y: y(n.row) + 3.5,
					       class: "mark" }, gr);
			m.textContent = "\u00d7";
		}
		const label = el("text", { x: textX, y: y(n.row) + 4 }, gr);
		let s = cut(n.summary, 70);
		if (!seen[n.conversation]) {
			seen[n.conversation] = true;
			if (n.parent && n.parent_row === null)
				s = "\u2937 " + s;	/* forked elsewhere */
			s = "[" + cut(titles[n.conversation], 30) + "] " + s;
		}
		label.textContent = s;
		gr.addEventListener("click", () => select(n.id));
		gr.addEventListener("keydown", (ev) => {
			if (ev.key === "Enter")
				select(n.id);
		});
		if (state.selected && state.selected.session === n.id)
			gr.classList.add("selected");
	}
}

async function loadGraph(selectId) {
	try {
		setStatus("loading\u2026");
		const g = await api("/api/graph?" + listQuery());
		state.graph = g;
		state.cursors[state.page + 1] = g.next_cursor;
		$("older").disabled = !g.next_cursor;
		$("newer").disabled = state.page === 0;
		$("pageinfo").textContent = `page ${state.page + 1}`;
		setStatus(`${g.conversations.length} conversation` +
			  (g.conversations.length === 1 ? "" : "s") +
			  `, ${g.nodes.length} turns`);
		draw(g);
		document.body.dataset.graph = "ready";
		if (selectId)
			await select(selectId);
	} catch (e) {
		setStatus("error: " + e.message);
	}
}

/* ---- a turn ---- */

function fillList(ul, items, text) {
	ul.textContent = "";
	for (const it of items) {
		const li = document.createElement("li");
		li.textContent = text(it);
		ul.appendChild(li);
	}
	ul.previousElementSibling.hidden = !items.length;
	ul.hidden = !items.length;
}

function fillMeta(t) {
	const dl = $("t-meta");
	const u = t.usage || {};
	const rows = [
		["session", t.session], ["conversation", t.conversation],
		["parent", t.parent || "none (a root)"],
		["status", t.failed ? `${t.status} (turn ${t.turn_status})` :
		 t.status],
		["created", t.created], ["model", t.model],
		["usage", `${u.input_tokens || 0} in, ${u.output_tokens || 0}` +
		 ` out, ${u.total_tokens || 0} tokens`],
		["duration", `${t.duration_ms} ms`]
	];
	if (t.forked_from)
		rows.push(["forked from", t.forked_from]);
	dl.textContent = "";
	for (const [k, v] of rows) {
		const dt = document.createElement("dt");
		const dd = document.createElement("dd");
		dt.textContent = k;
		dd.textContent = v === null || v === undefined ? "-" :
			String(v);
		dl.appendChild(dt);
		dl.appendChild(dd);
	}
}

function lines(div, items, heading) {
	div.textContent = "";
	if (!items.length)
		return;
	const h = document.createElement("h3");
	h.textContent = heading;
	div.appendChild(h);
	for (const s of items) {
		const p = document.createElement("pre");
		p.textContent = s;
		div.appendChild(p);
	}
}

function rawPayload(details, id) {
	const pre = details.querySelector("pre");

	details.hidden = !id;
	details.open = false;
	pre.textContent = "";
	details.ontoggle = async () => {
		if (!details.open || pre.textContent)
			return;
		try {
			const body = await api("/api/objects/" + id);
			let text = typeof body === "string" ? body :
				JSON.stringify(body, null, 2);
			try {
				text = JSON.stringify(JSON.parse(text), null,
						      2);
			} catch (e) {
				/* not JSON: as it is */
			}
			pre.textContent = text;
		} catch (e) {
			pre.textContent = "error: " + e.message;
		}
	};
}

async function select(id) {
	try {
		const t = await api("/api/turns/" + id + "/full");
		state.selected = t;
		for (const g of document.querySelectorAll("#graph .node"))
			g.classList.toggle("selected", g.dataset.id === id);
		$("hint").hidden = true;
		$("turn").hidden = false;
		$("act").hidden = false;
		$("t-title").textContent = `Turn #${t.seq} of ` +
			conversationTitle(t.conversation);
		fillMeta(t);
		lines($("t-errors"), t.errors, "Errors");
		$("t-instruction").textContent = t.instruction;
		$("t-answer").textContent = t.answer === null ?
			"(no answer)" : t.answer;
		fillList($("t-sources"), t.sources, (c) =>
			`${c.path}:${c.start_line}-${c.end_line}  score ` +
			c.score.toFixed(3) +
			(c.sent ? "" : "  (already sent)"));
		fillList($("t-files"), t.files, (f) =>
			`${f.path}  ${f.size} bytes  ` +
			(f.too_large ? "too large" : f.binary ? "binary" :
			 f.sent ? "sent" : "unchanged") +
			(f.touched ? ", touched" : ""));
		lines($("t-warnings"), t.warnings, "Warnings");
		rawPayload($("t-request"), t.request_id);
		rawPayload($("t-response"), t.response_payload_id);
		document.body.dataset.selected = id;
	} catch (e) {
		setStatus("error: " + e.message);
	}
}

function conversationTitle(id) {
	const c = state.graph && state.graph.conversations.find(
		(c) => c.id === id);
	return c && c.title ? `\u201c${c.title}\u201d` : id.slice(0, 8);
}

/* ---- running a turn ---- */

function parseEvents(buf, onEvent) {
	let i;

	while ((i = buf.indexOf("\n\n")) >= 0) {
		const block = buf.slice(0, i);
		let name = "message", data = "";

		buf = buf.slice(i + 2);
		for (const line of block.split("\n")) {
			if (line.startsWith("event: "))
				name = line.slice(7);
			else if (line.startsWith("data: "))
				data += line.slice(6);
		}
		if (data)
			onEvent(name, JSON.parse(data));
	}
	return buf;
}

async function run(body) {
	const out = $("stream");
	let final = null;

	out.textContent = "";
	state.deltas = 0;
	document.body.dataset.state = "starting";
	for (const b of ["continue", "fork", "rerun"])
		$(b).disabled = true;
	try {
		const r = await fetch("/api/ai/agent/execute", {
			method: "POST",
			headers: { Authorization: "Bearer " + state.token,
				   "Content-Type": "application/json",
				   Accept: "text/event-stream" },
			body: JSON.stringify(body)
		});
		if (!r.ok) {
			const e = await r.json();
			throw new Error(e.error ? e.error.message :
					"HTTP " + r.status);
		}
		const reader = r.body.getReader();
		const dec = new TextDecoder();
		let buf = "";
		for (;;) {
			const { value, done } = await reader.read();
			if (done)
				break;
			const text = dec.decode(value, { stream: true });
			buf = parseEvents(buf + text, (name, d) => {
				if (name === "started") {
					state.running = d.conversation;
					$("interrupt").disabled = false;
					document.body.dataset.state =
						"streaming";
				} else if (name === "delta") {
					state.deltas++;
					out.textContent += d.text;
				} else if (name === "completed") {
					final = d;
				}
			});
		}
		if (!final)
			throw new Error("the stream ended early");
		if (final.kind === "error")
			out.textContent += `\n\n[${final.status}: ` +
				`${final.error_message}]`;
		document.body.dataset.state = "done";
		document.body.dataset.result = final.status;
		await loadGraph(final.session);
	} catch (e) {
		out.textContent += "\nerror: " + e.message;
		document.body.dataset.state = "error";
	} finally {
		state.running = null;
		$("interrupt").disabled = true;
		for (const b of ["continue", "fork", "rerun"])
			$(b).disabled = false;
	}
}

function instruction() {
	const s = $("instruction").value;

	if (!s.trim()) {
		$("stream").textContent = "Type an instruction first.";
		return null;
	}
	return s;
}

function setup() {
	initToken();
	$("tokenform").addEventListener("submit", (ev) => {
		ev.preventDefault();
		sessionStorage.setItem("aptix-token", $("token").value.trim());
		state.token = $("token").value.trim();
		$("login").hidden = true;
		loadGraph();
	});
	$("filter").addEventListener("submit", (ev) => ev.preventDefault());
	for (const id of ["q", "all", "archived"])
		$(id).addEventListener("change", () => {
			state.page = 0;
			state.cursors = [null];
			loadGraph();
		});
	$("older").addEventListener("click", () => {
		state.page++;
		loadGraph();
	});
	$("newer").addEventListener("click", () => {
		state.page = Math.max(0, state.page - 1);
		loadGraph();
	});
	$("continue").addEventListener("click", () => {
		const s = instruction();
		if (s && state.selected)
			run({ kind: "continue",
			      conversation: state.selected.conversation,
			      instruction: s });
	});
	$("fork").addEventListener("click", () => {
		const s = instruction();
		if (s && state.selected)
			run({ kind: "fork", session: state.selected.session,
			      instruction: s });
	});
	$("rerun").addEventListener("click", () => {
		if (state.selected)
			run({ kind: "rerun", session: state.selected.session });
	});
	$("interrupt").addEventListener("click", () => {
		if (state.running)
			api("/api/conversations/" + state.running +
			    "/interrupt", { method: "POST", body: "{}" }).catch(
				(e) => setStatus("error: " + e.message));
	});
	if (state.token)
		loadGraph();
}

document.addEventListener("DOMContentLoaded", setup);
