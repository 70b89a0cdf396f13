// sandboxer's dashboard: asks for a token, keeps it in this tab's
// sessionStorage, polls the feed with it as a bearer token and draws
// what the feed says. Everything is written with textContent (never as
// HTML), so nothing the feed carries can run as script.
"use strict";
(function () {
  const KEY = "sandboxer.dashboard.token";
  const FEED = "/v1/dashboard";
  const POLL_MS = 2000;
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  let feed = null; // the last feed
  let skew = 0; // server clock minus this browser's, in ms
  let gen = 0; // bumped on every start and stop: a stale poll drops out
  let timer = null;

  const token = () => sessionStorage.getItem(KEY);
  const serverNow = () => Date.now() + skew;

  function setStatus(text) {
    $("status").textContent = text;
  }

  function stop() {
    gen++;
    if (timer) clearTimeout(timer);
    timer = null;
  }

  function showLogin(message) {
    stop();
    feed = null;
    $("board").hidden = true;
    $("signout").hidden = true;
    $("login").hidden = false;
    $("viewer").textContent = "";
    setStatus("");
    $("login-error").textContent = message || "";
    $("token").focus();
  }

  function start() {
    stop();
    $("login").hidden = true;
    $("login-error").textContent = "";
    $("board").hidden = false;
    $("signout").hidden = false;
    poll(gen);
  }

  function fetchFeed(tok) {
    return fetch(FEED, {
      headers: { Authorization: "Bearer " + tok, Accept: "application/json" },
      cache: "no-store",
      credentials: "omit",
      redirect: "error",
    });
  }

  async function poll(mine) {
    const tok = token();
    if (!tok) {
      showLogin();
      return;
    }
    let wait = POLL_MS;
    if (document.hidden) {
      // Nobody looks: no call (a tenant's polls spend its rate).
      timer = setTimeout(() => poll(mine), wait);
      return;
    }
    try {
      const resp = await fetchFeed(tok);
      if (mine !== gen) return;
      if (resp.status === 401) {
        sessionStorage.removeItem(KEY);
        showLogin("The token was refused.");
        return;
      }
      if (resp.status === 429) {
        wait = Math.max(1, Number(resp.headers.get("Retry-After")) || 5) * 1000;
        setStatus("rate limited: next update in " + wait / 1000 + " s");
      } else if (!resp.ok) {
        const body = await resp.json().catch(() => ({}));
        setStatus("the feed answered " + resp.status + (body.error ? ": " + body.error : ""));
      } else {
        const f = await resp.json();
        if (mine !== gen) return;
        feed = f;
        skew = Date.parse(f.now) - Date.now();
        render();
        setStatus("updated " + clock(new Date(serverNow())));
      }
    } catch (e) {
      if (mine !== gen) return;
      setStatus("cannot reach the server: retrying");
    }
    if (mine === gen) timer = setTimeout(() => poll(mine), wait);
  }

  // Durations, for people: "9m 58s", "1h 05m 10s", "2d 3h".
  function duration(ms) {
    let s = Math.max(0, Math.floor(ms / 1000));
    const d = Math.floor(s / 86400);
    s -= d * 86400;
    const h = Math.floor(s / 3600);
    s -= h * 3600;
    const m = Math.floor(s / 60);
    s -= m * 60;
    const two = (n) => String(n).padStart(2, "0");
    if (d > 0) return d + "d " + h + "h";
    if (h > 0) return h + "h " + two(m) + "m " + two(s) + "s";
    if (m > 0) return m + "m " + two(s) + "s";
    return s + "s";
  }

  // Latencies: "120 ms", "4.2 s", "12 s".
  function latency(ms) {
    if (ms < 1000) return ms + " ms";
    const s = ms / 1000;
    return (s < 10 ? String(Number(s.toFixed(1))) : String(Math.round(s))) + " s";
  }

  function clock(d) {
    return d.toLocaleTimeString([], { hour12: false });
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function render() {
    const v = feed.viewer || {};
    $("viewer").textContent = v.operator ? "operator: everything" : "tenant " + v.tenant;
    renderInstances();
    renderPools();
    renderEvents();
    renderChart();
    tick();
  }

  function renderInstances() {
    const body = $("instances").tBodies[0];
    const rows = [];
    for (const inst of feed.instances || []) {
      const tr = el("tr");
      tr.dataset.address = inst.address;
      tr.appendChild(el("td", "address", inst.address));
      tr.appendChild(el("td", "owner", inst.owner || "operator"));
      tr.appendChild(el("td", "runtime", inst.runtime || "docker"));
      tr.appendChild(el("td", "services", (inst.services || []).join(", ")));
      const age = el("td", "age");
      age.dataset.since = inst.created_at;
      tr.appendChild(age);
      const ttl = el("td", "ttl");
      if (inst.expires_at) ttl.dataset.until = inst.expires_at;
      tr.appendChild(ttl);
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    $("count").textContent = "(" + rows.length + ")";
    $("no-instances").hidden = rows.length > 0;
    const damaged = feed.damaged || [];
    $("damaged").hidden = damaged.length === 0;
    $("damaged").replaceChildren(
      ...damaged.map((d) => el("p", "failed", "unreadable record " + d.address + ": " + d.error))
    );
  }

  function renderPools() {
    const pools = feed.pools || [];
    $("pools-section").hidden = pools.length === 0;
    $("pools").tBodies[0].replaceChildren(
      ...pools.map((p) => {
        const tr = el("tr");
        tr.dataset.address = p.address;
        tr.appendChild(el("td", "address", p.address));
        tr.appendChild(el("td", "ready", p.error ? p.error : p.ready + " / " + p.size));
        const td = el("td");
        const m = el("meter");
        m.min = 0;
        m.max = Math.max(1, p.size);
        m.value = p.ready || 0;
        m.low = Math.max(1, p.size) / 2;
        m.optimum = m.max;
        td.appendChild(m);
        tr.appendChild(td);
        return tr;
      })
    );
  }

  function renderEvents() {
    const list = feed.events || [];
    $("since").textContent = feed.since ? "(of this server process, since " + new Date(feed.since).toLocaleString() + ")" : "";
    $("no-events").hidden = list.length > 0;
    $("events").replaceChildren(
      ...list.map((e) => {
        const li = el("li", e.event === "failed" ? "failed" : "");
        li.dataset.event = e.event;
        li.dataset.address = e.address;
        li.appendChild(el("span", "time", clock(new Date(e.time))));
        li.appendChild(el("span", "event", e.event));
        const parts = [e.address];
        if (e.owner) parts.push("owner " + e.owner);
        if (e.generation) parts.push("gen " + e.generation);
        if (e.elapsed_ms) parts.push(latency(e.elapsed_ms));
        if (e.reason) parts.push(e.reason);
        if (e.replica) parts.push("on " + e.replica);
        li.appendChild(el("span", "detail", parts.join(" · ")));
        return li;
      })
    );
  }

  // Ages count up and TTLs down between polls, from the server's clock.
  function tick() {
    if (!feed) return;
    const now = serverNow();
    for (const td of document.querySelectorAll("#instances td.age")) {
      td.textContent = duration(now - Date.parse(td.dataset.since));
    }
    for (const td of document.querySelectorAll("#instances td.ttl")) {
      if (!td.dataset.until) {
        td.textContent = "never";
        continue;
      }
      const left = Date.parse(td.dataset.until) - now;
      td.textContent = left > 0 ? duration(left) : "expired (awaiting reap)";
      td.classList.toggle("expired", left <= 0);
      td.classList.toggle("soon", left > 0 && left < 60000);
    }
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // The chart: per minute, the median (solid) and 95th percentile
  // (dashed) of claim and cold-start latency over the last hour.
  function renderChart() {
    const lat = feed.latency;
    const chart = $("chart");
    const W = 640, H = 220, L = 56, R = 12, T = 22, B = 26;
    const from = Date.parse(lat.from), to = Date.parse(lat.to);
    const series = [
      { name: "claim", cls: "claim", data: lat.claim },
      { name: "cold start", cls: "cold", data: lat.cold_start },
    ];
    // A log scale: claims take milliseconds, cold starts seconds.
    let lo = Infinity, hi = 0;
    for (const s of series) {
      for (const b of s.data.buckets) {
        lo = Math.min(lo, b.p50_ms);
        hi = Math.max(hi, b.p95_ms);
      }
    }
    if (hi === 0) {
      lo = 10;
      hi = 10000;
    }
    const dmin = Math.floor(Math.log10(Math.max(1, lo)));
    const dmax = Math.max(dmin + 1, Math.ceil(Math.log10(Math.max(1, hi))));
    const x = (t) => L + ((t - from) / (to - from)) * (W - L - R);
    const y = (ms) => H - B - ((Math.log10(Math.max(1, ms)) - dmin) / (dmax - dmin)) * (H - T - B);
    const nodes = [];
    for (let d = dmin; d <= dmax; d++) {
      const ms = Math.pow(10, d);
      nodes.push(svg("line", { class: "grid", x1: L, x2: W - R, y1: y(ms), y2: y(ms) }));
      nodes.push(svg("text", { x: L - 6, y: y(ms) + 4, "text-anchor": "end" }, latency(ms)));
    }
    for (let m = 60; m >= 0; m -= 15) {
      const t = to - m * 60000;
      nodes.push(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: T, y2: H - B }));
      nodes.push(svg("text", { x: x(t), y: H - 8, "text-anchor": "middle" }, m === 0 ? "now" : "-" + m + "m"));
    }
    let lx = L;
    for (const s of series) {
      const half = (lat.bucket_seconds * 1000) / 2;
      const pts = s.data.buckets.map((b) => [x(Math.min(to, Date.parse(b.start) + half)), b]);
      if (pts.length > 0) {
        nodes.push(svg("polyline", { class: s.cls, points: pts.map(([px, b]) => px + "," + y(b.p50_ms)).join(" ") }));
        nodes.push(svg("polyline", { class: s.cls + " p95", points: pts.map(([px, b]) => px + "," + y(b.p95_ms)).join(" ") }));
        for (const [px, b] of pts) {
          const c = svg("circle", { class: s.cls, cx: px, cy: y(b.p50_ms), r: 3 });
          c.appendChild(svg("title", {}, s.name + " " + clock(new Date(b.start)) + ": " + b.count + " × median " +
            latency(b.p50_ms) + ", p95 " + latency(b.p95_ms) + ", max " + latency(b.max_ms)));
          nodes.push(c);
        }
      }
      nodes.push(svg("text", { class: s.cls, x: lx, y: 14 }, "● " + s.name + " (" + s.data.count + ")"));
      lx += 150;
    }
    nodes.push(svg("text", { x: W - R, y: 14, "text-anchor": "end" }, "median solid, p95 dashed, log scale"));
    chart.replaceChildren(...nodes);
    const sum = series.map((s) =>
      s.data.count === 0
        ? s.name + ": none"
        : s.name + ": " + s.data.count + ", median " + latency(s.data.p50_ms) + ", p95 " + latency(s.data.p95_ms) +
          ", max " + latency(s.data.max_ms)
    );
    $("latency-summary").textContent = sum.join(" · ");
  }

  $("login").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("token");
    const tok = input.value.trim();
    input.value = ""; // not kept in the form
    if (!tok) return;
    let resp;
    try {
      resp = await fetchFeed(tok);
    } catch (e) {
      $("login-error").textContent = "Cannot reach the server.";
      return;
    }
    if (resp.status === 401) {
      $("login-error").textContent = "The token was refused.";
      return;
    }
    sessionStorage.setItem(KEY, tok);
    start();
  });

  $("signout").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    $("instances").tBodies[0].replaceChildren();
    $("events").replaceChildren();
    $("chart").replaceChildren();
    showLogin();
  });

  // Back in view: update at once.
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !$("board").hidden && token()) start();
  });

  setInterval(tick, 1000);
  if (token()) start();
  else showLogin();
})();
