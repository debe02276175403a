// agent-pages live search: a progressive enhancement of the header's search form.
//
// Without this file the form submits to /search as usual. With it, results follow
// the visitor's typing: one JSON request to /search after a 300 ms pause, and only
// when the match copy (the server's normalization, approximated) actually changed;
// a newer query aborts an older one, and an answer is painted only while the box
// still holds its match copy. Every answer painted moves the address (the first of
// a visit pushes a history entry, later ones replace it), the title and the live
// region with it. The remaining budget is shown from the RateLimit headers.
// "Searching…" (and aria-busy) shows when an answer takes over 300 ms. A 503 is
// retried once after Retry-After plus jitter; a 429 shows the wait and counts it
// down, never retrying by itself; "Try again" searches what the box holds. Arrow
// keys move through the results; Enter on results already shown moves to the first.
//
// Every text from the server or the visitor is put in the page with textContent,
// never as markup.

const PAUSE_MS = 300;
const PENDING_MS = 300;
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

/** A structured header list (`"minute";r=18;t=42, "hour";r=198;t=3000`) as
 *  [{name, r, t}]: every item's name and its numeric parameters. */
function parseItems(value) {
  if (!value) return [];
  return value.split(",").map((item) => {
    const [name, ...params] = item.trim().split(";");
    const entry = { name: name.replace(/"/g, "").trim() };
    for (const p of params) {
      const [k, v] = p.split("=");
      entry[k.trim()] = Number(v);
    }
    return entry;
  });
}

/** `RateLimit: "minute";r=18;t=42, "hour";r=198;t=3000` as [{name, r, t}]. */
export function parseRateLimit(value) {
  return parseItems(value).filter((e) => Number.isFinite(e.r));
}

const plural = (n, one, many) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** A wait in words, as the server page says it: seconds up to a minute
 *  ("1 second", "60 seconds"), past it minutes and seconds ("4 minutes 31
 *  seconds", "2 minutes"). */
export function formatWait(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s <= 60) return plural(s, "second", "seconds");
  const rest = s % 60;
  return plural(Math.floor(s / 60), "minute", "minutes") +
    (rest ? ` ${plural(rest, "second", "seconds")}` : "");
}

/** The visitor's budget as the answers told it: per window (`minute`, `hour`) the
 *  searches left and when the window ends (ms). A refusal names only the full
 *  window; the others keep what the last admitted answer said. Windows are fixed,
 *  so a window that has ended has its whole quota (`q` of RateLimit-Policy). */
export class Budget {
  constructor() {
    this.windows = new Map();
    // A search was lost on its way (it may have been spent, even several times):
    // what is known is an upper bound until the next answer.
    this.atMost = false;
  }

  /** A search got no answer: it may have been counted. */
  lost() {
    this.atMost = true;
  }

  /** Records an answer's `RateLimit` and `RateLimit-Policy` values, received at
   *  `now` (ms since the epoch). */
  record(rateLimit, policy, now) {
    const quotas = new Map(parseItems(policy).map((p) => [p.name, p.q]));
    if (parseRateLimit(rateLimit).length > 0) this.atMost = false;
    for (const { name, r, t } of parseRateLimit(rateLimit)) {
      const known = this.windows.get(name);
      const q = quotas.has(name) ? quotas.get(name) : known && known.q;
      this.windows.set(name, { r, q, endsAt: now + (Number(t) || 0) * 1000 });
    }
  }

  /** The tightest window at `now`: {name, r, atMost}, or null before any answer. */
  tightest(now) {
    let best = null;
    for (const [name, w] of this.windows) {
      const r = now >= w.endsAt && Number.isFinite(w.q) ? w.q : w.r;
      if (!best || r < best.r) best = { name, r, atMost: this.atMost };
    }
    return best;
  }
}

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

const searchUrl = (q, page) =>
  `/search?q=${encodeURIComponent(q)}${page > 1 ? `&page=${page}` : ""}`;

/** Shows the time left until `until` (ms) in `target` each second, then calls
 *  `done` (at once when it has passed). Returns a function that stops it. */
function countDown(until, target, done) {
  let timer = null;
  const tick = () => {
    const left = Math.ceil((until - Date.now()) / 1000);
    if (left > 0) {
      target.textContent = formatWait(left);
      return true;
    }
    clearInterval(timer);
    done();
    return false;
  };
  if (tick()) timer = setInterval(tick, 1000);
  return () => clearInterval(timer);
}

/** What a lost answer says: it may have been spent, even several times (Chromium
 *  sends a GET again by itself when a kept-alive connection drops before the
 *  answer, and the script cannot tell how often); the budget line says "At most". */
const LOST = "No answer came: the connection failed. The search may still have been " +
  "counted, more than once if your browser sent it again by itself. Check the " +
  "connection and try again.";

class LiveSearch {
  constructor(form) {
    this.form = form;
    this.input = form.querySelector("input[name=q]");
    this.main = document.getElementById("main");
    this.budgetLine = document.getElementById("search-budget");
    this.pendingLine = document.getElementById("search-pending");
    this.status = document.getElementById("search-status");
    const page = new URLSearchParams(location.search).get("page");
    const results = this.main.querySelector(".page-head[data-outcome=results]");
    this.original = {
      nodes: Array.from(this.main.childNodes),
      url: location.pathname + location.search,
      title: document.title,
      // As the server filled the box (the visitor may have typed before this ran).
      value: this.input.defaultValue,
      // A first page of results for that query needs no request.
      shown: location.pathname === "/search" && results && (page === null || page === "1")
        ? matchCopy(this.input.defaultValue) : "",
      wait: false,
    };
    this.showing = "original";
    // The match copy of the results shown ("" when no results are shown).
    this.shown = this.original.shown;
    this.budget = new Budget();
    this.timer = null;
    this.pendingTimer = null;
    this.pendingShown = false;
    // The request whose answer is awaited: {copy, controller, retry}.
    this.inFlight = null;
    // A 429 in force: {until (ms), unit}.
    this.wait = null;
    // The last live view painted, for Forward: {view, nodes, url, title, value, shown, countdown}.
    this.liveView = null;
    // Whether the history entry shown is the one this visit's live answers use.
    this.pushed = false;
    // The address (path and query) of what main shows.
    this.paintedUrl = this.original.url;
    this.stopCountdown = () => {};

    this.input.addEventListener("input", () => this.schedule());
    this.input.addEventListener("keydown", (e) => this.onInputKey(e));
    this.main.addEventListener("keydown", (e) => this.onResultKey(e));
    form.addEventListener("submit", (e) => this.onSubmit(e));
    window.addEventListener("popstate", (e) => this.onPop(e));
    // Typed before this module ran: no input event will come for it.
    if (this.input.value !== this.input.defaultValue) this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), PAUSE_MS);
  }

  /** Stops the pause, the request in flight and a scheduled retry. */
  cancel() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight) {
      if (this.inFlight.controller) this.inFlight.controller.abort();
      clearTimeout(this.inFlight.retry);
    }
    this.inFlight = null;
    this.stopPending();
  }

  waiting() {
    return this.wait !== null && Date.now() < this.wait.until;
  }

  /** The box's match copy is still `copy`. */
  isCurrent(copy) {
    return matchCopy(this.input.value) === copy;
  }

  run() {
    this.timer = null;
    const q = this.input.value.trim();
    const copy = matchCopy(q);
    if (Array.from(copy).length < MIN_CHARS) {
      this.cancel();
      this.restore();
      return;
    }
    if (this.inFlight && this.inFlight.copy === copy) return;
    if (copy === this.shown) {
      this.cancel();
      return;
    }
    if (this.waiting()) {
      const shownWait = this.showing === "wait" || (this.showing === "original" && this.original.wait);
      if (!shownWait) this.showRefusal(q);
      return;
    }
    this.send(q, copy);
  }

  async send(q, copy, isRetry = false) {
    if (this.inFlight) {
      if (this.inFlight.controller) this.inFlight.controller.abort();
      clearTimeout(this.inFlight.retry);
    }
    const request = { copy, controller: new AbortController(), retry: null };
    this.inFlight = request;
    this.startPending();
    let response;
    let body;
    try {
      response = await fetch(searchUrl(q, 1), {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        signal: request.controller.signal,
      });
      body = await response.json().catch(() => ({}));
    } catch (e) {
      if (this.inFlight !== request) return;
      this.inFlight = null;
      this.budget.lost();
      this.showBudget(Date.now());
      if (!this.isCurrent(copy)) return this.stopPending();
      this.showFailure(q, LOST);
      return;
    }
    if (this.inFlight !== request) return;
    this.inFlight = null;
    const now = Date.now();
    this.budget.record(response.headers.get("RateLimit"), response.headers.get("RateLimit-Policy"), now);
    this.showBudget(now);
    const retryAfter = Number(response.headers.get("Retry-After")) || 1;
    if (response.status === 429) {
      // The refusal is the visitor's, whatever the query: remembered even when
      // the box has moved on.
      const refusing = parseRateLimit(response.headers.get("RateLimit"))[0];
      this.wait = { until: now + retryAfter * 1000, unit: refusing ? refusing.name : null };
    }
    // The box changed while this answer was on its way: the next request (its
    // pause is running) answers what the box holds now.
    if (!this.isCurrent(copy)) return this.stopPending();

    if (response.status === 200 && Array.isArray(body.results) && !body.message) {
      this.shown = copy;
      this.showResults(body);
    } else if (response.status === 200) {
      this.shown = "";
      this.present("info", this.notice("Search", "info", body.message || "Enter at least 2 characters.", null),
        searchUrl(q, 1), `Search: ${q} · agent-pages`, body.message || "");
    } else if (response.status === 429) {
      this.showRefusal(q);
    } else if (response.status === 503 && !isRetry) {
      // Once, after the advised wait plus up to a second of jitter, so visitors
      // turned away together do not all come back together. "Searching…" stays.
      this.inFlight = { copy, controller: null, retry: null };
      const retry = this.inFlight;
      retry.retry = setTimeout(() => {
        if (this.inFlight !== retry) return;
        this.inFlight = null;
        if (this.isCurrent(copy)) this.send(q, copy, true);
        else this.stopPending();
      }, retryAfter * 1000 + Math.random() * 1000);
    } else if (response.status === 503) {
      this.showWait(body.title || "Search is busy", body.detail || "Search is busy right now.",
        now + retryAfter * 1000, q);
    } else {
      // A 500 may go away; a refused text (400) will not: no "Try again" for it.
      const failed = response.status >= 500;
      this.showFailure(q, body.detail || "This search could not be answered.",
        failed ? "Search failed" : (body.title || "Search"), failed);
    }
  }

  startPending() {
    if (this.pendingTimer !== null || this.pendingShown) return;
    this.pendingTimer = setTimeout(() => {
      this.pendingTimer = null;
      this.pendingShown = true;
      this.pendingLine.textContent = "Searching…";
      this.main.setAttribute("aria-busy", "true");
    }, PENDING_MS);
  }

  stopPending() {
    clearTimeout(this.pendingTimer);
    this.pendingTimer = null;
    if (!this.pendingShown) return;
    this.pendingShown = false;
    this.pendingLine.textContent = "";
    this.main.removeAttribute("aria-busy");
  }

  /** Paints `view` in main with its title and live region text, without touching
   *  history. `countdown` ({until, counter, done}) is (re)started. */
  paint(view) {
    this.stopCountdown();
    this.stopCountdown = () => {};
    this.stopPending();
    this.main.replaceChildren(...view.nodes);
    this.showing = view.view;
    this.paintedUrl = view.url;
    document.title = view.title;
    this.updateThemeLinks(view.url);
    this.status.textContent = view.status;
    if (view.countdown) {
      const { until, counter, done } = view.countdown;
      this.stopCountdown = countDown(until, counter, done);
    }
  }

  /** Paints a live answer; the address follows: the first live answer of a visit
   *  pushes a history entry (Back returns to the page typed on), later ones
   *  replace it. */
  present(view, nodes, url, title, status, countdown = null) {
    this.liveView = { view, nodes, url, title, status, countdown, value: this.input.value, shown: this.shown };
    this.paint(this.liveView);
    if (this.pushed) {
      history.replaceState({ live: true }, "", url);
    } else {
      history.pushState({ live: true }, "", url);
      this.pushed = true;
    }
  }

  /** The page as it was loaded, when the box holds too little to search. */
  restore() {
    if (this.showing === "original") return;
    this.shown = this.original.shown;
    this.paint({ ...this.original, view: "original", status: "" });
    if (this.pushed) {
      // Back to the entry typed on; its popstate finds the page already shown.
      this.pushed = false;
      history.back();
    }
  }

  /** Back and Forward between the page typed on and its live answers. An entry
   *  at the address already shown (a `#main` skip, the back() of restore) changes
   *  nothing. */
  onPop(e) {
    if (location.pathname + location.search === this.paintedUrl) return;
    this.cancel();
    if (e.state && e.state.live) {
      if (!this.liveView) {
        location.reload();
        return;
      }
      this.pushed = true;
      this.input.value = this.liveView.value;
      this.shown = this.liveView.shown;
      this.paint(this.liveView);
    } else {
      this.pushed = false;
      this.input.value = this.original.value;
      this.shown = this.original.shown;
      this.paint({ ...this.original, view: "original", status: "" });
    }
  }

  updateThemeLinks(url) {
    for (const a of document.querySelectorAll(".theme-switch a")) {
      const target = new URL(a.href, location.href);
      target.searchParams.set("back", url);
      a.href = target.pathname + target.search;
    }
  }

  showBudget(now) {
    const tightest = this.budget.tightest(now);
    if (!tightest) return;
    const left = `${plural(tightest.r, "search", "searches")} left this ${tightest.name}`;
    this.budgetLine.textContent = tightest.atMost ? `At most ${left}` : left;
  }

  /** The results, worded as the server's page words them (search.html). */
  showResults(body) {
    const fmt = (n) => n.toLocaleString("en-US");
    const shown = body.results.length;
    const matches = body.total === 1 ? "1 match" : `${fmt(body.total)} matches`;
    let count = shown > 0 && body.truncated ? `Showing 1–${fmt(shown)} of ${fmt(body.total)} matches` : matches;
    // Capped results keep whole pages: the kept matches are pages × page size.
    if (body.capped) count += ` (the best ${fmt(body.pages * shown)} can be paged through)`;
    const head = el("div", "page-head", el("h1", null, `Results for “${body.query}”`), el("p", "muted", count));
    head.dataset.outcome = "results";
    if (body.close_matches) head.append(el("p", "muted close-matches", "Includes close matches for words you typed."));
    const nodes = [head];
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
      nodes.push(el("div", "table-wrap", el("table", "listing results", el("thead", null, headRow), tbody)));
      if (body.pages > 1) {
        const next = el("a", null, "Next →");
        next.href = searchUrl(body.query, 2);
        next.rel = "next";
        const pager = el("nav", "pager", el("span"), el("span", "muted", `Page 1 of ${fmt(body.pages)}`), next);
        pager.setAttribute("aria-label", "Pages of results");
        nodes.push(pager);
      }
    } else {
      nodes.push(el("p", "notice notice--info", "No matches."));
    }
    nodes.push(backToLedger());
    this.present("results", nodes, searchUrl(body.query, 1), `Search: ${body.query} · agent-pages`,
      `${matches} for ${body.query}`);
  }

  /** The heading and notice of a situation (`retryQuery` null: no "Try again"). */
  notice(heading, kind, message, retryQuery) {
    const notice = el("div", `notice notice--${kind}`, el("p", null, message));
    notice.setAttribute("role", kind === "info" ? "status" : "alert");
    const nodes = [el("div", "page-head", el("h1", null, heading)), notice];
    if (retryQuery !== null) nodes.push(this.retryButton(retryQuery));
    nodes.push(backToLedger());
    return nodes;
  }

  /** A failure: the same rule as every answer (address, title and live region
   *  follow); the notice is an alert, so the polite region is emptied. */
  showFailure(q, message, heading = "Search failed", retry = true) {
    this.shown = "";
    this.present("failure", this.notice(heading, "error", message, retry ? q : null), searchUrl(q, 1),
      `${heading} · agent-pages`, "");
  }

  /** The 429 in force, for `q`. */
  showRefusal(q) {
    const unit = this.wait.unit;
    const message = unit === "minute" || unit === "hour"
      ? `Too many searches this ${unit}: you have used all the searches one visitor may make in ${unit === "hour" ? "an hour" : "a minute"}.`
      : "Too many searches: you have used all the searches one visitor may make for now.";
    this.showWait("Too many searches", message, this.wait.until, q);
  }

  /** A 429 or a second 503: the wait, counted down, then "Try again". */
  showWait(heading, message, until, q) {
    this.shown = "";
    const counter = el("span", "countdown", formatWait((until - Date.now()) / 1000));
    const line = el("p", "retry", "You can search again in ", counter, ".");
    line.setAttribute("aria-live", "off");
    const notice = el("div", "notice notice--warn", el("p", null, message), line);
    notice.setAttribute("role", "alert");
    const retry = this.retryButton(q);
    const button = retry.querySelector("button");
    button.disabled = true;
    const done = () => {
      line.textContent = "You can search again now.";
      button.disabled = false;
      this.status.textContent = "You can search again now.";
      // The full window has ended: its quota is back.
      this.showBudget(Math.max(Date.now(), until));
    };
    this.present("wait", [el("div", "page-head", el("h1", null, heading)), notice, retry, backToLedger()],
      searchUrl(q, 1), `${heading} · agent-pages`, "", { until, counter, done });
  }

  /** "Try again": searches what the box holds (`fallback`, the query refused or
   *  failed, when the box holds too little). */
  retryButton(fallback) {
    const button = el("button", null, "Try again");
    button.type = "button";
    button.addEventListener("click", () => {
      let q = this.input.value.trim();
      if (Array.from(matchCopy(q)).length < MIN_CHARS) {
        q = fallback;
        this.input.value = q;
      }
      this.wait = null;
      clearTimeout(this.timer);
      this.send(q, matchCopy(q));
    });
    return el("div", "retry-form", button);
  }

  /** Enter: results already shown for the box's query need no second search (it
   *  would spend one); the first result gets the focus instead. */
  onSubmit(e) {
    const copy = matchCopy(this.input.value);
    if (copy !== "" && copy === this.shown) {
      e.preventDefault();
      clearTimeout(this.timer);
      const first = this.resultLinks()[0];
      if (first) first.focus();
      return;
    }
    if (this.inFlight && this.inFlight.copy === copy) {
      // Its answer is on the way (or its retry is scheduled).
      e.preventDefault();
      clearTimeout(this.timer);
      return;
    }
    this.cancel();
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
  const until = Date.now() + (Number(line.dataset.retryAfter) || 1) * 1000;
  if (line.dataset.outcome === "rate_limited") {
    live.wait = { until, unit: line.dataset.window || null };
    live.original.wait = true;
  }
  line.setAttribute("aria-live", "off");
  const button = document.querySelector("main .retry-form button");
  if (button) button.disabled = true;
  countDown(until, counter, () => {
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
