// agent-pages live search: a progressive enhancement of the header's search form.
//
// Without this file the form submits to /search as usual. With it, results follow
// the visitor's typing: one JSON request to /search after a 300 ms pause, and only
// when the match copy (the server's normalization, approximated) actually changed;
// a newer query aborts an older one; the address follows with replaceState so reload
// and back work; the remaining budget is shown from the RateLimit header. A 503 is
// retried once after Retry-After plus jitter; a 429 shows the wait and counts it
// down, never retrying by itself. Arrow keys move through the results, Enter opens.
//
// Every text from the server or the visitor is put in the page with textContent,
// never as markup.

const PAUSE_MS = 300;
const MIN_CHARS = 2;

/** The server's match copy, approximated: NFKC, lower case, anything that is not
 *  a letter, number or mark becomes a space, runs collapse, ends trimmed. */
export function matchCopy(text) {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}]+/gu, " ")
    .trim();
}

/** `RateLimit: "minute";r=18;t=42, "hour";r=198;t=3000` as [{name, r, t}]. */
export function parseRateLimit(value) {
  if (!value) return [];
  return value.split(",").flatMap((item) => {
    const [name, ...params] = item.trim().split(";");
    const entry = { name: name.replace(/"/g, "").trim() };
    for (const p of params) {
      const [k, v] = p.split("=");
      entry[k.trim()] = Number(v);
    }
    return Number.isFinite(entry.r) ? [entry] : [];
  });
}

const plural = (n, one, many) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

function formatTime(unix) {
  const d = new Date(unix * 1000);
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())} UTC`;
}

/** `tag` with `className` and children (nodes or strings, added as text). */
function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) node.append(child);
  return node;
}

/** The link every answer ends with. */
function backToLedger() {
  const back = el("a", null, "Back to the ledger");
  back.href = "/";
  return el("p", "back", back);
}

/** Counts `seconds` down in `target` (an element whose text is "N seconds"),
 *  then calls `done`. Returns a function that stops it. */
function countDown(seconds, target, done) {
  let left = Math.max(1, Math.round(seconds));
  target.textContent = plural(left, "second", "seconds");
  const timer = setInterval(() => {
    left -= 1;
    if (left > 0) {
      target.textContent = plural(left, "second", "seconds");
    } else {
      clearInterval(timer);
      done();
    }
  }, 1000);
  return () => clearInterval(timer);
}

class LiveSearch {
  constructor(form) {
    this.form = form;
    this.input = form.querySelector("input[name=q]");
    this.main = document.getElementById("main");
    this.budget = document.getElementById("search-budget");
    this.status = document.getElementById("search-status");
    this.original = {
      nodes: Array.from(this.main.childNodes),
      url: location.pathname + location.search,
      title: document.title,
    };
    this.showing = "original";
    // What the page already shows: a results page for this query needs no request.
    this.shown = location.pathname === "/search" ? matchCopy(this.input.value) : "";
    this.timer = null;
    this.retryTimer = null;
    this.controller = null;
    this.blockedUntil = 0;
    this.stopCountdown = () => {};

    this.input.addEventListener("input", () => this.schedule());
    this.input.addEventListener("keydown", (e) => this.onInputKey(e));
    this.main.addEventListener("keydown", (e) => this.onResultKey(e));
    form.addEventListener("submit", () => this.cancel());
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), PAUSE_MS);
  }

  cancel() {
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
    if (this.controller) this.controller.abort();
    this.controller = null;
  }

  run() {
    const copy = matchCopy(this.input.value);
    if (Array.from(copy).length < MIN_CHARS) {
      this.cancel();
      this.shown = "";
      this.restore();
      return;
    }
    if (copy === this.shown) return;
    if (Date.now() < this.blockedUntil) return;
    this.shown = copy;
    this.send(this.input.value.trim(), copy, false);
  }

  async send(q, copy, isRetry) {
    this.cancel();
    const controller = new AbortController();
    this.controller = controller;
    let response;
    let body;
    try {
      response = await fetch(`/search?q=${encodeURIComponent(q)}`, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        signal: controller.signal,
      });
      body = await response.json().catch(() => ({}));
    } catch (e) {
      if (controller.signal.aborted) return;
      this.shown = "";
      this.showNotice("Search failed", "error", "The search could not be sent. Check the connection and try again.", q);
      return;
    }
    if (controller.signal.aborted || this.controller !== controller) return;
    this.controller = null;
    this.showBudget(response.headers.get("RateLimit"));
    const retryAfter = Number(response.headers.get("Retry-After")) || 1;

    if (response.status === 200 && Array.isArray(body.results) && !body.message) {
      this.showResults(body);
      this.follow(`/search?q=${encodeURIComponent(q)}`, `Search: ${body.query} · agent-pages`);
    } else if (response.status === 200) {
      this.showNotice("Search", "info", body.message || "Enter at least 2 characters.", null);
    } else if (response.status === 429) {
      this.shown = "";
      this.blockedUntil = Date.now() + retryAfter * 1000;
      const refusing = parseRateLimit(response.headers.get("RateLimit"))[0];
      const unit = refusing && refusing.name === "hour" ? "hour" : "minute";
      this.showWait("Too many searches",
        `Too many searches this ${unit}: you have used all the searches one visitor may make in ${unit === "hour" ? "an hour" : "a minute"}.`,
        retryAfter, q);
      this.follow(`/search?q=${encodeURIComponent(q)}`, "Too many searches · agent-pages");
    } else if (response.status === 503 && !isRetry) {
      // Once, after the advised wait plus up to a second of jitter, so visitors
      // turned away together do not all come back together.
      const wait = retryAfter * 1000 + Math.random() * 1000;
      this.retryTimer = setTimeout(() => {
        if (matchCopy(this.input.value) === copy) this.send(q, copy, true);
      }, wait);
    } else if (response.status === 503) {
      this.shown = "";
      this.showWait(body.title || "Search is busy", body.detail || "Search is busy right now.", retryAfter, q);
    } else {
      this.shown = "";
      this.showNotice(response.status >= 500 ? "Search failed" : "Search", "error",
        body.detail || "This search could not be answered.", response.status >= 500 ? q : null);
    }
  }

  /** The address and title follow the shown answer, so reload and back work. */
  follow(url, title) {
    history.replaceState(null, "", url);
    document.title = title;
    this.updateThemeLinks(url);
  }

  updateThemeLinks(url) {
    for (const a of document.querySelectorAll(".theme-switch a")) {
      const target = new URL(a.href, location.href);
      target.searchParams.set("back", url);
      a.href = target.pathname + target.search;
    }
  }

  restore() {
    if (this.showing === "original") return;
    this.stopCountdown();
    this.main.replaceChildren(...this.original.nodes);
    this.showing = "original";
    this.follow(this.original.url, this.original.title);
    this.status.textContent = "";
  }

  replaceMain(...nodes) {
    this.stopCountdown();
    this.main.replaceChildren(...nodes);
    this.showing = "live";
  }

  showBudget(header) {
    const windows = parseRateLimit(header);
    if (windows.length === 0) return;
    const tightest = windows.reduce((a, b) => (b.r < a.r ? b : a));
    this.budget.textContent = `${plural(tightest.r, "search", "searches")} left this ${tightest.name}`;
    this.budget.hidden = false;
  }

  showResults(body) {
    const head = el("div", "page-head", el("h1", null, `Results for “${body.query}”`));
    const count = body.total === 1 ? "1 match" : plural(body.total, "match", "matches");
    head.append(el("p", "muted", count + (body.truncated ? `, showing the top ${body.results.length.toLocaleString("en-US")}` : "")));
    let listing;
    if (body.total > 0) {
      const tbody = el("tbody");
      for (const r of body.results) {
        const title = el("span", "result-title");
        const chars = Array.from(r.title);
        let at = 0;
        for (const [start, end] of r.marks || []) {
          if (start < at || end > chars.length) continue;
          if (start > at) title.append(chars.slice(at, start).join(""));
          title.append(el("mark", null, chars.slice(start, end).join("")));
          at = end;
        }
        if (at < chars.length) title.append(chars.slice(at).join(""));
        const link = el("a", null, title, " ", el("span", "slug", r.slug));
        link.href = `/p/${encodeURIComponent(r.slug)}`;
        tbody.append(el("tr", null,
          el("td", "title", link),
          el("td", "num", el("span", "cell-label", "score "), r.score.toFixed(1)),
          el("td", "date", formatTime(r.updated_at))));
      }
      const headRow = el("tr", null, el("th", null, "Title"), el("th", "num", "Score"), el("th", null, "Updated"));
      for (const th of headRow.children) th.scope = "col";
      listing = el("div", "table-wrap", el("table", "listing results", el("thead", null, headRow), tbody));
    } else {
      listing = el("p", "notice notice--info", "No matches.");
    }
    this.replaceMain(head, listing, backToLedger());
    this.status.textContent = `${count} for ${body.query}`;
  }

  showNotice(heading, kind, message, retryQuery) {
    const notice = el("div", `notice notice--${kind}`, el("p", null, message));
    notice.setAttribute("role", kind === "info" ? "status" : "alert");
    const nodes = [el("div", "page-head", el("h1", null, heading)), notice];
    if (retryQuery !== null) nodes.push(this.retryButton(retryQuery));
    this.replaceMain(...nodes, backToLedger());
  }

  /** A 429 or a second 503: the wait, counted down, then a "Try again" button. */
  showWait(heading, message, seconds, q) {
    const counter = el("span", "countdown");
    const line = el("p", "retry", "You can search again in ", counter, ".");
    line.setAttribute("aria-live", "off");
    const notice = el("div", "notice notice--warn", el("p", null, message), line);
    notice.setAttribute("role", "alert");
    const retry = this.retryButton(q);
    const button = retry.querySelector("button");
    button.disabled = true;
    this.replaceMain(el("div", "page-head", el("h1", null, heading)), notice, retry, backToLedger());
    this.stopCountdown = countDown(seconds, counter, () => {
      line.textContent = "You can search again now.";
      button.disabled = false;
      this.status.textContent = "You can search again now.";
    });
  }

  retryButton(q) {
    const button = el("button", null, "Try again");
    button.type = "button";
    button.addEventListener("click", () => {
      this.blockedUntil = 0;
      const copy = matchCopy(q);
      this.shown = copy;
      this.send(q, copy, false);
    });
    return el("div", "retry-form", button);
  }

  resultLinks() {
    return Array.from(this.main.querySelectorAll("table.results td.title a"));
  }

  onInputKey(e) {
    if (e.key !== "ArrowDown") return;
    const links = this.resultLinks();
    if (links.length === 0) return;
    e.preventDefault();
    links[0].focus();
  }

  onResultKey(e) {
    const links = this.resultLinks();
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    if (e.key === "ArrowDown" && at + 1 < links.length) {
      e.preventDefault();
      links[at + 1].focus();
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      (at > 0 ? links[at - 1] : this.input).focus();
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.input.focus();
    }
  }
}

/** A server-rendered 429 or 503 page: count its wait down and hold its "Try again"
 *  button until then; after a 429, typing sends nothing until then either. */
function countDownServerWait(live) {
  const line = document.querySelector("main .retry[data-retry-after]");
  const counter = line && line.querySelector(".countdown");
  if (!counter) return;
  const seconds = Number(line.dataset.retryAfter) || 1;
  if (line.dataset.outcome === "rate_limited") live.blockedUntil = Date.now() + seconds * 1000;
  line.setAttribute("aria-live", "off");
  const button = document.querySelector("main .retry-form button");
  if (button) button.disabled = true;
  countDown(seconds, counter, () => {
    line.textContent = "You can search again now.";
    if (button) button.disabled = false;
    const status = document.getElementById("search-status");
    if (status) status.textContent = "You can search again now.";
  });
}

const form = document.querySelector("form.search-form");
if (form && document.getElementById("main")) {
  // Also walks a server-rendered result table with the arrow keys.
  countDownServerWait(new LiveSearch(form));
}
