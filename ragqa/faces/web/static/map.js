// The map of a collection on a canvas: one point per paper, coloured by theme, theme labels
// (the sub-themes' names when zoomed in), pan (drag), zoom (wheel, +/-), hover for the title,
// click to open a paper, a search box that marks the titles it matches, the papers of a
// question ringed, and a legend whose themes zoom to their region. A small map labels each
// paper by its short title. Used by the web page's Map view and inlined into the file
// `ragqa map --out map.html` writes (no other file, no network). Every text from the
// collection is drawn on the canvas or set as textContent.
"use strict";

// Twelve colours that stay apart for colour-blind readers (Tableau 10 + two).
const MAP_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];
const APART_COLOUR = "#c8c8c8"; // papers apart from every theme (theme -1)
const TITLES_UP_TO = 60; // a map this small labels its papers (as faces/pictures.py)
const SUBTHEMES_FROM = 2.5; // times the full view's scale: sub-themes' names from there on
const LABEL_PLACES = 12; // candidate places per label: its points, from the middle out

class PaperMap {
  constructor(host, data, { onOpen = null } = {}) {
    this.host = host;
    this.data = data;
    this.onOpen = onOpen;
    this.n = data.points.x.length;
    this.highlighted = new Set();
    this.matched = null; // Set of indices the search box matches, null when empty
    this.hover = -1;
    this.frameTimes = []; // ms per drawn frame (read by bench/maps/frame_time.py)
    this.drawnLabels = []; // [{name, x, y, w, h}] as drawn at the current zoom (tests read it)
    this.canvas = document.createElement("canvas");
    this.canvas.className = "map-canvas";
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", `Map of ${this.n} papers in ${data.themes.length} themes`);
    this.canvas.tabIndex = 0;
    this.tip = document.createElement("div");
    this.tip.className = "map-tip";
    this.tip.hidden = true;
    host.append(this.canvas, this.tip);
    this.indexPoints();
    this.subthemes = data.subthemes || [];
    this.places = this.labelPlaces(data.points.theme, data.themes);
    this.subPlaces = this.labelPlaces(data.points.subtheme || [], this.subthemes);
    this.split = new Set(this.subthemes.map((s) => s.theme));
    this.listen();
    this.resize();
    this.reset();
  }

  // A grid over the unit square: hovering asks one cell and its neighbours, not 37,932 points.
  indexPoints() {
    const size = 64;
    this.gridSize = size;
    this.grid = new Map();
    const { x, y } = this.data.points;
    for (let i = 0; i < this.n; i++) {
      const key = Math.min(size - 1, Math.max(0, Math.floor(x[i] * size))) * size
        + Math.min(size - 1, Math.max(0, Math.floor(y[i] * size)));
      if (!this.grid.has(key)) this.grid.set(key, []);
      this.grid.get(key).push(i);
    }
  }

  // For each theme (or sub-theme): where its label may go, its given place first, then its
  // points from the middle of the region out; and the box of its points (for focusTheme).
  labelPlaces(labels, themes) {
    const { x, y } = this.data.points;
    const members = themes.map(() => []);
    for (let i = 0; i < labels.length; i++) if (labels[i] >= 0) members[labels[i]].push(i);
    const median = (values) => {
      const sorted = [...values].sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)];
    };
    return themes.map((t, k) => {
      const rows = members[k];
      const places = [{ x: t.x, y: t.y }];
      if (!rows.length) return { places, box: null };
      const mx = median(rows.map((i) => x[i]));
      const my = median(rows.map((i) => y[i]));
      rows.sort((a, b) => ((x[a] - mx) ** 2 + (y[a] - my) ** 2) - ((x[b] - mx) ** 2 + (y[b] - my) ** 2));
      const most = Math.min(LABEL_PLACES, rows.length);
      for (let j = 0; j < most; j++) {
        const i = rows[Math.floor((j * (rows.length - 1)) / Math.max(1, most - 1))];
        places.push({ x: x[i], y: y[i] });
      }
      // The box of its points but the outer 2 % on each side (a straggler would zoom out).
      const xs = rows.map((i) => x[i]).sort((a, b) => a - b);
      const ys = rows.map((i) => y[i]).sort((a, b) => a - b);
      const at = (values, q) => values[Math.min(values.length - 1, Math.floor(q * values.length))];
      const box = { x0: at(xs, 0.02), x1: at(xs, 0.98), y0: at(ys, 0.02), y1: at(ys, 0.98) };
      return { places, box };
    });
  }

  colourOf(theme) {
    return theme >= 0 ? MAP_COLOURS[theme % MAP_COLOURS.length] : APART_COLOUR;
  }

  themeName(i) {
    const p = this.data.points;
    const theme = this.data.themes[p.theme[i]];
    if (!theme) return "apart from every theme";
    const sub = p.subtheme ? this.subthemes[p.subtheme[i]] : null;
    return sub ? `${theme.name} › ${sub.name}` : theme.name;
  }

  // The theme's region filling the view, zoomed in at least as far as its sub-themes' names.
  focusTheme(k) {
    const box = this.places[k] && this.places[k].box;
    if (!box) return;
    const margin = 40;
    const span = Math.max(box.x1 - box.x0, box.y1 - box.y0, 0.02);
    const fit = Math.min(this.width - 2 * margin, this.height - 2 * margin) / span;
    this.scale = this.split.has(k) ? Math.max(SUBTHEMES_FROM * this.baseScale, fit) : fit;
    this.offsetX = this.width / 2 - ((box.x0 + box.x1) / 2) * this.scale;
    this.offsetY = this.height / 2 - (1 - (box.y0 + box.y1) / 2) * this.scale;
    this.request();
  }

  // The legend: a button per theme (it zooms there), and the papers apart from every theme.
  buildLegend(list) {
    list.replaceChildren();
    this.data.themes.forEach((t, k) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "map-legend-theme";
      button.title = "Zoom to this theme";
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = this.colourOf(k);
      button.append(swatch, `${t.name} (${t.papers.toLocaleString()})`);
      button.addEventListener("click", () => this.focusTheme(k));
      item.append(button);
      list.append(item);
    });
    if (this.data.apart) {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = APART_COLOUR;
      item.append(swatch, `apart from every theme (${this.data.apart.toLocaleString()})`);
      list.append(item);
    }
  }

  resize() {
    const box = this.host.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    this.width = Math.max(200, box.width);
    this.height = Math.max(200, box.height);
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${this.height}px`;
    this.ratio = ratio;
    this.baseScale = this.fullScale();
    this.request();
  }

  // The scale at which the whole map fills the view (`reset`); sub-theme names show from
  // SUBTHEMES_FROM times it.
  fullScale() {
    return Math.min(this.width, this.height) - 48;
  }

  reset() {
    this.scale = this.fullScale();
    this.offsetX = (this.width - this.scale) / 2;
    this.offsetY = (this.height - this.scale) / 2;
    this.baseScale = this.scale;
    this.request();
  }

  toScreen(i) {
    return [this.offsetX + this.data.points.x[i] * this.scale,
      this.offsetY + (1 - this.data.points.y[i]) * this.scale];
  }

  fromScreen(sx, sy) {
    return [(sx - this.offsetX) / this.scale, 1 - (sy - this.offsetY) / this.scale];
  }

  zoom(factor, sx = this.width / 2, sy = this.height / 2) {
    const next = Math.min(Math.max(this.scale * factor, 50), 200 * Math.min(this.width, this.height));
    const applied = next / this.scale;
    this.offsetX = sx - (sx - this.offsetX) * applied;
    this.offsetY = sy - (sy - this.offsetY) * applied;
    this.scale = next;
    this.request();
  }

  setHighlight(ids) {
    const wanted = new Set(ids || []);
    this.highlighted = new Set();
    this.data.points.paper_id.forEach((id, i) => { if (wanted.has(id)) this.highlighted.add(i); });
    this.request();
    return this.highlighted.size;
  }

  search(text) {
    const words = text.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) { this.matched = null; this.request(); return 0; }
    this.matched = new Set();
    const { title } = this.data.points;
    for (let i = 0; i < this.n; i++) {
      const t = title[i].toLowerCase();
      if (words.every((w) => t.includes(w))) this.matched.add(i);
    }
    this.request();
    return this.matched.size;
  }

  nearest(sx, sy) {
    const [ux, uy] = this.fromScreen(sx, sy);
    const size = this.gridSize;
    const cx = Math.floor(ux * size);
    const cy = Math.floor(uy * size);
    const reach = Math.max(1, Math.ceil((8 / this.scale) * size));
    let best = -1;
    let bestDistance = 64; // px², a point within 8 px
    for (let gx = cx - reach; gx <= cx + reach; gx++) {
      for (let gy = cy - reach; gy <= cy + reach; gy++) {
        if (gx < 0 || gy < 0 || gx >= size || gy >= size) continue;
        for (const i of this.grid.get(gx * size + gy) || []) {
          const [px, py] = this.toScreen(i);
          const d = (px - sx) ** 2 + (py - sy) ** 2;
          if (d < bestDistance) { bestDistance = d; best = i; }
        }
      }
    }
    return best;
  }

  listen() {
    let drag = null;
    const c = this.canvas;
    c.addEventListener("pointerdown", (e) => {
      drag = { x: e.clientX, y: e.clientY, ox: this.offsetX, oy: this.offsetY, moved: false };
      c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      const r = c.getBoundingClientRect();
      if (drag) {
        const dx = e.clientX - drag.x;
        const dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        this.offsetX = drag.ox + dx;
        this.offsetY = drag.oy + dy;
        this.request();
        return;
      }
      this.showTip(this.nearest(e.clientX - r.left, e.clientY - r.top), e.clientX - r.left,
        e.clientY - r.top);
    });
    c.addEventListener("pointerup", (e) => {
      const r = c.getBoundingClientRect();
      const wasDrag = drag && drag.moved;
      drag = null;
      if (wasDrag) return;
      const i = this.nearest(e.clientX - r.left, e.clientY - r.top);
      if (i >= 0 && this.onOpen) this.onOpen(this.data.points.paper_id[i], i);
    });
    c.addEventListener("pointerleave", () => { this.showTip(-1); });
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = c.getBoundingClientRect();
      this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    c.addEventListener("keydown", (e) => {
      const step = 40;
      if (e.key === "+" || e.key === "=") this.zoom(1.25);
      else if (e.key === "-") this.zoom(0.8);
      else if (e.key === "0") this.reset();
      else if (e.key === "ArrowLeft") { this.offsetX += step; this.request(); }
      else if (e.key === "ArrowRight") { this.offsetX -= step; this.request(); }
      else if (e.key === "ArrowUp") { this.offsetY += step; this.request(); }
      else if (e.key === "ArrowDown") { this.offsetY -= step; this.request(); }
      else return;
      e.preventDefault();
    });
    if (window.ResizeObserver) new ResizeObserver(() => this.resize()).observe(this.host);
  }

  showTip(i, sx = 0, sy = 0) {
    this.hover = i;
    if (i < 0) { this.tip.hidden = true; this.request(); return; }
    const p = this.data.points;
    const where = [p.venue[i], p.year[i]].filter(Boolean).join(" ");
    this.tip.replaceChildren();
    const title = document.createElement("strong");
    title.textContent = p.title[i];
    const meta = document.createElement("div");
    meta.textContent = [where, this.themeName(i)].filter(Boolean).join(" · ");
    this.tip.append(title, meta);
    this.tip.hidden = false;
    this.tip.style.left = `${Math.min(sx + 14, this.width - 260)}px`;
    this.tip.style.top = `${sy + 14}px`;
    this.request();
  }

  request() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  draw() {
    const started = performance.now();
    const ctx = this.canvas.getContext("2d");
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    const marking = this.highlighted.size > 0 || this.matched !== null;
    // About as large as the room each point has at the default zoom (9 px for the 29 seeds,
    // 2 px for 37,932 papers), growing as the map is zoomed in.
    const room = Math.sqrt((this.scale * this.scale) / Math.max(this.n, 1));
    const size = Math.max(1.5, Math.min(9, room * 0.12)) *
      Math.max(1, Math.log2(this.scale / Math.min(this.width, this.height)) + 1);
    this.drawPoints(dark, marking, size);
    ctx.globalAlpha = 1;
    // Labels under the marks: a highlighted paper is never hidden by a theme's name.
    this.drawLabels(ctx, dark);
    this.drawMarked(ctx, this.matched, "#000", dark ? "#fff" : "#111", size + 2);
    // A question's papers are ringed, not filled: no colour a theme has (a red fill sat beside
    // a red theme), and each paper keeps its theme's colour inside the ring.
    this.drawRinged(ctx, this.highlighted, dark ? "#fff" : "#000", size + 6);
    if (this.hover >= 0) {
      const [hx, hy] = this.toScreen(this.hover);
      ctx.strokeStyle = dark ? "#fff" : "#000";
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(hx, hy, size + 4, 0, 2 * Math.PI);
      ctx.stroke();
    }
    this.frameTimes.push(performance.now() - started);
    if (this.frameTimes.length > 500) this.frameTimes.shift();
  }

  // The points as pixels written straight into one image: 37,932 paths of the 2D API took
  // 33 ms a frame in Chromium (bench/maps/frame_time.py), these take a few.
  drawPoints(dark, marking, size) {
    const ctx = this.canvas.getContext("2d");
    const W = this.canvas.width;
    const H = this.canvas.height;
    if (!this.image || this.image.width !== W || this.image.height !== H) {
      this.image = ctx.createImageData(W, H);
      this.pixels = new Uint32Array(this.image.data.buffer);
    }
    const background = dark ? [17, 17, 17] : [255, 255, 255];
    const alpha = marking ? 0.4 : 0.8;
    const packed = (rgb) => ((255 << 24) | (rgb[2] << 16) | (rgb[1] << 8) | rgb[0]) >>> 0;
    const colours = [...MAP_COLOURS, APART_COLOUR].map((hex) => {
      const rgb = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
      return packed(rgb.map((c, k) => Math.round(alpha * c + (1 - alpha) * background[k])));
    });
    const apart = colours.pop();
    const px = this.pixels;
    px.fill(packed(background));
    const r = this.ratio;
    const side = Math.max(1, Math.round(size * r));
    const { x, y, theme } = this.data.points;
    const ox = this.offsetX * r - side / 2;
    const oy = this.offsetY * r - side / 2;
    const sc = this.scale * r;
    for (let i = 0; i < this.n; i++) {
      const left = Math.round(ox + x[i] * sc);
      const top = Math.round(oy + (1 - y[i]) * sc);
      if (left < 0 || top < 0 || left + side > W || top + side > H) continue;
      const colour = theme[i] >= 0 ? colours[theme[i] % colours.length] : apart;
      for (let dy = 0; dy < side; dy++) {
        const row = (top + dy) * W + left;
        for (let dx = 0; dx < side; dx++) px[row + dx] = colour;
      }
    }
    ctx.putImageData(this.image, 0, 0);
  }

  drawRinged(ctx, marked, stroke, size) {
    if (!marked || !marked.size) return;
    ctx.strokeStyle = stroke;
    ctx.lineWidth = 2.5;
    this.circles(ctx, marked, size);
    ctx.stroke();
  }

  drawMarked(ctx, marked, fill, stroke, size) {
    if (!marked || !marked.size) return;
    ctx.fillStyle = fill === "#000" ? stroke : fill;
    ctx.strokeStyle = stroke;
    ctx.lineWidth = 1;
    this.circles(ctx, marked, size);
    ctx.fill();
    ctx.stroke();
  }

  // One path of a circle around each of the `marked` points.
  circles(ctx, marked, size) {
    ctx.beginPath();
    for (const i of marked) {
      const [sx, sy] = this.toScreen(i);
      ctx.moveTo(sx + size / 2, sy);
      ctx.arc(sx, sy, size / 2, 0, 2 * Math.PI);
    }
  }

  // The labels of this zoom: the themes' names at full view, their sub-themes' once zoomed in
  // (a theme without sub-themes keeps its own), largest first. Each goes to the first of its
  // places (its points, from the middle of its region out) where it overlaps no label already
  // drawn, on one line or two; on a small map it covers no paper either, and then each paper
  // gets its short title beside it where there is room. Left out where there is none: zooming
  // in makes room.
  drawLabels(ctx, dark) {
    const zoomed = this.subthemes.length && this.scale >= SUBTHEMES_FROM * this.baseScale;
    const layer = [];
    this.data.themes.forEach((t, k) => {
      if (!(zoomed && this.split.has(k))) layer.push({ t, at: this.places[k], major: true });
    });
    if (zoomed) this.subthemes.forEach((t, j) => layer.push({ t, at: this.subPlaces[j], major: false }));
    layer.sort((a, b) => b.t.papers - a.t.papers);
    const small = this.n <= TITLES_UP_TO;
    const dots = small ? [...Array(this.n).keys()].map((i) => this.toScreen(i)) : [];
    const placed = [];
    const free = (b, skip = -1) => b.x > 2 && b.y > 2 && b.x + b.w < this.width - 2
      && b.y + b.h < this.height - 2
      && !placed.some((o) => b.x < o.x + o.w && o.x < b.x + b.w && b.y < o.y + o.h && o.y < b.y + b.h)
      && !dots.some(([dx, dy], i) => i !== skip && dx > b.x - 4 && dx < b.x + b.w + 4
        && dy > b.y - 4 && dy < b.y + b.h + 4);
    for (const { t, at, major } of layer) {
      ctx.font = major ? "600 13px system-ui, sans-serif" : "600 12px system-ui, sans-serif";
      const box = this.placeLabel(ctx, t.name, at.places, free, small ? [0, -16, 16] : [0]);
      if (!box) continue;
      placed.push(box);
      ctx.fillStyle = dark ? "rgba(17,17,17,0.75)" : "rgba(255,255,255,0.8)";
      ctx.fillRect(box.x, box.y, box.w, box.h);
      ctx.fillStyle = dark ? "#eee" : "#222";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      box.lines.forEach((line, k) => ctx.fillText(line, box.x + box.w / 2, box.y + 10 + k * 16));
    }
    if (small && this.data.points.short_title) this.drawTitles(ctx, dark, dots, placed, free);
    this.drawnLabels = placed.map(({ name, x, y, w, h, paper }) => ({ name, x, y, w, h,
      paper: !!paper }));
  }

  placeLabel(ctx, name, places, free, shifts) {
    const words = name.split(" ");
    const half = Math.ceil(words.length / 2);
    const forms = [[name]];
    if (words.length > 2) forms.push([words.slice(0, half).join(" "), words.slice(half).join(" ")]);
    for (const lines of forms) {
      const w = Math.max(...lines.map((l) => ctx.measureText(l).width)) + 8;
      const h = 16 * lines.length + 4;
      for (const place of places) {
        const sx = this.offsetX + place.x * this.scale;
        const sy = this.offsetY + (1 - place.y) * this.scale;
        for (const shift of shifts) {
          const box = { name, lines, x: sx - w / 2, y: sy - h / 2 + shift, w, h };
          if (free(box)) return box;
        }
      }
    }
    return null;
  }

  drawTitles(ctx, dark, dots, placed, free) {
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillStyle = dark ? "#ccc" : "#333";
    const titles = this.data.points.short_title;
    dots.forEach(([dx, dy], i) => {
      const w = ctx.measureText(titles[i]).width + 2;
      const h = 13;
      const spots = [[dx + 7, dy - h / 2], [dx - 7 - w, dy - h / 2], [dx - w / 2, dy - 8 - h],
        [dx - w / 2, dy + 8]];
      for (const [x, y] of spots) {
        const box = { name: titles[i], x, y, w, h, paper: true };
        if (!free(box, i)) continue;
        placed.push(box);
        ctx.textAlign = "left";
        ctx.fillText(titles[i], x + 1, y + h / 2);
        return;
      }
    });
  }
}

window.PaperMap = PaperMap;
