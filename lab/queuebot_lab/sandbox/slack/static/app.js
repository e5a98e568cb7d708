// The local Slack workspace in a browser: renders what the bot posted from its Block Kit and
// sends what people do (clicks, modal submissions, slash commands) to the sandbox, which signs
// them as Slack would. Everything from the bot or an alert is untrusted text: it is escaped
// before it becomes HTML, and links keep only http(s) and mailto targets.
"use strict";

const params = new URLSearchParams(location.search);
const ui = {
  state: null,
  user: params.get("as") || "U0ONCALL",
  channel: params.get("channel") || null,
  thread: null, // {channel, ts}
  modalKey: null,
  refreshing: false,
  again: false,
};

const $ = (id) => document.getElementById(id);

// -- text --------------------------------------------------------------------------------------

function escapeHtml(text) {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

// Slack's own escapes (&amp; &lt; &gt;) back to characters.
function unslack(text) {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function emoji(html) {
  const known = (ui.state && ui.state.emoji) || {};
  return html.replace(/:([a-z0-9_+-]+):/g, (whole, name) => known[name] || whole);
}

function safeHref(url) {
  try {
    const parsed = new URL(url);
    return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : null;
  } catch (_) {
    return null;
  }
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const LONG_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
  "September", "October", "November", "December"];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const pad = (n) => String(n).padStart(2, "0");
const ordinal = (day) => {
  const teen = day % 100 >= 10 && day % 100 <= 20;
  return `${day}${teen ? "th" : { 1: "st", 2: "nd", 3: "rd" }[day % 10] || "th"}`;
};

function formatDate(epoch, pattern) {
  const when = new Date(epoch * 1000);
  // As Slack shows them: "Feb 18, 2014", "February 18th, 2014" (the day never zero-padded).
  const short = `${MONTHS[when.getMonth()]} ${when.getDate()}, ${when.getFullYear()}`;
  const long = `${LONG_MONTHS[when.getMonth()]} ${ordinal(when.getDate())}, ${when.getFullYear()}`;
  const fields = {
    date_num: `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}`,
    date: long,
    date_short: short,
    date_long: `${DAYS[when.getDay()]}, ${long}`,
    date_pretty: long,
    date_short_pretty: short,
    date_long_pretty: `${DAYS[when.getDay()]}, ${long}`,
    time: `${pad(when.getHours())}:${pad(when.getMinutes())}`,
    time_secs: `${pad(when.getHours())}:${pad(when.getMinutes())}:${pad(when.getSeconds())}`,
    ago: agoText(Date.now() / 1000 - epoch),
  };
  return pattern.replace(/\{(\w+)\}/g, (whole, name) => (name in fields ? fields[name] : whole));
}

function agoText(seconds) {
  const minutes = Math.floor(seconds / 60);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? "" : "s"} ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} hour${hours === 1 ? "" : "s"} ago`;
  const days = Math.floor(hours / 24);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}

function userName(id) {
  const found = ((ui.state && ui.state.users) || []).find((u) => u.id === id);
  return found ? found.name : id;
}

// {channel, ts} of a permalink to a message of this workspace (/archives/C…/p…), else null.
function archiveLink(href) {
  const url = new URL(href);
  const match = /^\/archives\/([A-Z0-9]+)\/p(\d{7,})$/.exec(url.pathname);
  if (url.origin !== location.origin || !match) return null;
  const digits = match[2];
  const ts = url.searchParams.get("thread_ts") || `${digits.slice(0, -6)}.${digits.slice(-6)}`;
  return { channel: match[1], ts };
}

// One `<…>` token of mrkdwn as HTML: a link, a mention, a date.
function tokenHtml(body) {
  const [target, ...rest] = body.split("|");
  const label = rest.join("|");
  if (target.startsWith("!date^")) {
    const [, epoch, pattern] = target.split("^");
    const shown = Number.isFinite(Number(epoch)) ? formatDate(Number(epoch), pattern || "")
      : unslack(label);
    return `<time class="date">${escapeHtml(shown)}</time>`;
  }
  if (["!channel", "!here", "!everyone"].includes(target)) {
    return `<span class="mention broadcast">@${escapeHtml(target.slice(1))}</span>`;
  }
  if (target.startsWith("!subteam^")) {
    return `<span class="mention">${escapeHtml(unslack(label) || "@group")}</span>`;
  }
  if (target.startsWith("@")) {
    return `<span class="mention">@${escapeHtml(label || userName(target.slice(1)))}</span>`;
  }
  if (target.startsWith("#")) {
    return `<span class="mention">#${escapeHtml(label || target.slice(1))}</span>`;
  }
  const href = safeHref(unslack(target));
  const text = escapeHtml(unslack(label || target));
  if (!href) return text;
  const thread = archiveLink(href);
  if (thread) {
    // A permalink into this workspace opens the thread here, as Slack does.
    return `<a href="${escapeHtml(href)}" data-channel="${escapeHtml(thread.channel)}"` +
      ` data-ts="${escapeHtml(thread.ts)}">${text}</a>`;
  }
  return `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${text}</a>`;
}

// mrkdwn as HTML (https://docs.slack.dev/messaging/formatting-message-text).
function mrkdwnHtml(text, verbatim) {
  const held = [];
  const hold = (html) => `\u0001${held.push(html) - 1}\u0002`;
  let work = text.replace(/```([\s\S]*?)```/g, (w, code) => hold(`<pre>${escapeHtml(unslack(code))}</pre>`));
  work = work.replace(/`([^`\n]+)`/g, (w, code) => hold(`<code>${escapeHtml(unslack(code))}</code>`));
  work = work.replace(/<([^<>]+)>/g, (w, body) => hold(tokenHtml(body)));
  let html = escapeHtml(unslack(work));
  html = html.replace(/(^|[^\w*])\*(?!\s)([^*\n]+?)\*(?!\w)/g, "$1<b>$2</b>");
  html = html.replace(/(^|[^\w_])_(?!\s)([^_\n]+?)_(?!\w)/g, "$1<i>$2</i>");
  html = html.replace(/(^|[^\w~])~(?!\s)([^~\n]+?)~(?!\w)/g, "$1<s>$2</s>");
  if (!verbatim) {
    html = html.replace(/(^|\s)(https?:\/\/[^\s<]+)/g, (w, pre, url) => {
      const href = safeHref(url.replace(/&amp;/g, "&"));
      return href ? `${pre}<a href="${escapeHtml(href)}" target="_blank" rel="noopener">${url}</a>` : w;
    });
  }
  html = emoji(html);
  return html.replace(/\u0001(\d+)\u0002/g, (w, index) => held[Number(index)]);
}

function textNode(object, tag = "span") {
  const node = document.createElement(tag);
  if (!object) return node;
  if (object.type === "mrkdwn") {
    node.innerHTML = mrkdwnHtml(object.text || "", object.verbatim);
  } else {
    node.innerHTML = emoji(escapeHtml(object.text || ""));
  }
  return node;
}

// -- Block Kit -------------------------------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function fileUrl(slackFile) {
  if (!slackFile) return null;
  if (slackFile.id) return `/ui/files/${encodeURIComponent(slackFile.id)}`;
  const match = /-(F[A-Z0-9]+)\//.exec(slackFile.url || "");
  return match ? `/ui/files/${match[1]}` : null;
}

function imageNode(image, small) {
  const source = image.image_url ? safeHref(image.image_url) : fileUrl(image.slack_file);
  const img = document.createElement("img");
  if (source) img.src = source;
  img.alt = image.alt_text || "";
  if (small) img.className = "small";
  return img;
}

function elementNode(element, message) {
  if (element.type === "button") {
    const button = el("button", `slack ${element.style || ""}`.trim());
    button.append(textNode(element.text));
    button.dataset.actionId = element.action_id || "";
    button.addEventListener("click", () => {
      if (element.url) {
        const href = safeHref(element.url);
        if (href) window.open(href, "_blank", "noopener");
      }
      act("/ui/click", {
        channel: message.channel, ts: message.ts, action_id: element.action_id, user: ui.user,
      }, button);
    });
    return button;
  }
  if (element.type === "image") return imageNode(element, true);
  if (element.type === "static_select" || element.type === "overflow") {
    const select = el("select", "slack-select");
    const placeholder = element.placeholder ? element.placeholder.text : "Select";
    select.append(el("option", null, placeholder));
    for (const option of element.options || []) {
      const item = el("option", null, option.text.text);
      item.value = option.value;
      select.append(item);
    }
    return select;
  }
  return el("span", "unsupported", `[${element.type}]`);
}

function blockNode(block, message) {
  switch (block.type) {
    case "header":
      return textNode(block.text, "div");
    case "section": {
      const node = el("div");
      const text = textNode(block.text, "div");
      text.classList.add("text");
      if (block.fields) {
        const fields = el("div", "fields");
        for (const field of block.fields) fields.append(textNode(field, "div"));
        text.append(fields);
      }
      node.append(text);
      if (block.accessory) node.append(elementNode(block.accessory, message));
      return node;
    }
    case "context": {
      const node = el("div");
      for (const element of block.elements || []) {
        node.append(element.type === "image" ? imageNode(element, true) : textNode(element));
      }
      return node;
    }
    case "divider":
      return el("hr");
    case "actions": {
      const node = el("div");
      for (const element of block.elements || []) node.append(elementNode(element, message));
      return node;
    }
    case "image": {
      const node = el("figure");
      node.style.margin = "0";
      if (block.title) {
        const title = textNode(block.title, "div");
        title.className = "title";
        node.append(title);
      }
      node.append(imageNode(block, false));
      return node;
    }
    case "markdown":
      return el("div", "text", block.text || "");
    default:
      return el("div", "unsupported", `[${block.type} block]`);
  }
}

function messageNode(message, options = {}) {
  const node = el("div", `message${message.ephemeral ? " ephemeral" : ""}`);
  node.dataset.ts = message.ts;
  const isBot = Boolean(message.bot_id) || message.user === ui.state.bot_user || message.ephemeral;
  const avatar = el("div", `avatar${isBot ? "" : " person"}`, isBot ? "Q" : userName(message.user)[0].toUpperCase());
  const body = el("div", "body");
  const meta = el("div", "meta");
  meta.append(el("span", "name", isBot ? "queuebot" : userName(message.user)));
  if (isBot) meta.append(el("span", "app-badge", "APP"));
  meta.append(el("span", "time", formatDate(Math.floor(Number(message.ts)), "{time}")));
  body.append(meta);
  if (message.ephemeral) body.append(el("div", "only-you", "Only visible to you"));
  const blocks = message.blocks || [];
  if (blocks.length) {
    for (const block of blocks) {
      const shown = blockNode(block, message);
      shown.classList.add("block", block.type);
      body.append(shown);
    }
  } else if (message.text) {
    body.append(textNode({ type: "mrkdwn", text: message.text }, "div"));
  }
  for (const file of message.files || []) {
    const figure = el("figure", "file");
    figure.style.margin = "4px 0";
    figure.append(el("div", "title", file.title || file.name || "file"));
    const img = document.createElement("img");
    img.src = `/ui/files/${encodeURIComponent(file.id)}`;
    img.alt = file.title || file.name || "uploaded file";
    figure.append(img);
    body.append(figure);
  }
  if (message.edited_count) body.append(el("span", "edited", "(edited)"));
  const replies = message.replies || [];
  if (options.threadLink && replies.length) {
    const link = el("button", "replies-link", `${replies.length} repl${replies.length === 1 ? "y" : "ies"}`);
    link.addEventListener("click", () => openThread(message.channel, message.ts));
    const line = el("div");
    line.append(link);
    body.append(line);
  }
  node.append(avatar, body);
  return node;
}

// -- the page --------------------------------------------------------------------------------

function currentChannel() {
  const channels = ui.state.channels;
  return channels.find((c) => c.id === ui.channel) || channels.find((c) => c.messages.length) || channels[0];
}

function render() {
  const state = ui.state;
  $("team").textContent = state.team;
  const channel = currentChannel();
  ui.channel = channel.id;
  renderSidebar(state, channel);
  $("channel-name").textContent = `#${channel.name}`;
  const list = $("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  const shown = [
    ...channel.messages.map((m) => ({ ...m, channel: channel.id })),
    ...channel.ephemerals.filter((e) => !e.thread_ts).map((e) => ({ ...e, channel: channel.id })),
  ].sort((a, b) => Number(a.ts) - Number(b.ts));
  list.replaceChildren(...shown.map((m) => messageNode(m, { threadLink: true })));
  if (atBottom) list.scrollTop = list.scrollHeight;
  renderThread(channel);
  renderModal(state);
}

function renderSidebar(state, channel) {
  const nav = $("channels");
  nav.replaceChildren(...state.channels.map((c) => {
    const link = el("a", c.id === channel.id ? "active" : "", `# ${c.name}`);
    link.href = "#";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      ui.channel = c.id;
      ui.thread = null;
      render();
    });
    return link;
  }));
  const who = $("who");
  if (!who.options.length) {
    for (const user of state.users.filter((u) => !u.is_bot)) {
      const option = el("option", null, `${user.name} (${user.real_name || user.id})`);
      option.value = user.id;
      who.append(option);
    }
    who.value = ui.user;
    who.addEventListener("change", () => {
      ui.user = who.value;
      refresh();
    });
  }
  const controls = $("controls");
  if (controls.children.length !== state.controls.length) {
    controls.replaceChildren(...state.controls.map((control) => {
      const button = el("button", null, control.label);
      button.title = control.hint || "";
      button.dataset.control = control.name;
      button.addEventListener("click", async () => {
        button.disabled = true;
        try {
          const answer = await post(`/ui/control/${encodeURIComponent(control.name)}`, {});
          $("control-said").textContent = answer.said || answer.error || "";
        } finally {
          button.disabled = false;
        }
      });
      return button;
    }));
  }
}

function openThread(channel, ts) {
  ui.thread = { channel, ts };
  render();
}

function renderThread(channel) {
  const pane = $("thread");
  if (!ui.thread || ui.thread.channel !== channel.id) {
    pane.hidden = true;
    return;
  }
  const parent = channel.messages.find((m) => m.ts === ui.thread.ts);
  if (!parent) {
    pane.hidden = true;
    return;
  }
  pane.hidden = false;
  const list = $("thread-messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  const replies = [
    ...parent.replies.map((r) => ({ ...r, channel: channel.id })),
    ...channel.ephemerals.filter((e) => e.thread_ts === parent.ts).map((e) => ({ ...e, channel: channel.id })),
  ].sort((a, b) => Number(a.ts) - Number(b.ts));
  const divider = el("div", "replies-divider", `${parent.replies.length} repl${parent.replies.length === 1 ? "y" : "ies"}`);
  list.replaceChildren(messageNode({ ...parent, channel: channel.id }), divider,
    ...replies.map((r) => messageNode(r)));
  if (atBottom) list.scrollTop = list.scrollHeight;
}

// -- modals ----------------------------------------------------------------------------------

function renderModal(state) {
  const backdrop = $("modal");
  const open = state.views[state.views.length - 1];
  if (!open) {
    backdrop.hidden = true;
    backdrop.replaceChildren();
    ui.modalKey = null;
    return;
  }
  const key = `${open.id}:${JSON.stringify(open.view)}`;
  if (ui.modalKey === key) {
    showErrors(backdrop, open.errors || {});
    return; // the same modal: keep what the person typed
  }
  ui.modalKey = key;
  const view = open.view;
  const modal = el("form", "modal");
  modal.setAttribute("role", "dialog");
  modal.setAttribute("aria-label", view.title ? view.title.text : "Modal");
  modal.append(el("header", null, view.title ? view.title.text : ""));
  const content = el("div", "content");
  for (const block of view.blocks || []) {
    content.append(block.type === "input" ? inputNode(block) : (() => {
      const shown = blockNode(block, {});
      shown.classList.add("block", block.type);
      return shown;
    })());
  }
  modal.append(content);
  const footer = el("footer");
  const close = el("button", "slack", view.close ? view.close.text : "Cancel");
  close.type = "button";
  close.addEventListener("click", () => post("/ui/close", { view_id: open.id }).then(refresh));
  const submit = el("button", "slack primary", view.submit ? view.submit.text : "Submit");
  submit.type = "submit";
  footer.append(close, submit);
  modal.append(footer);
  modal.addEventListener("submit", (event) => {
    event.preventDefault();
    act("/ui/submit", { view_id: open.id, values: inputValues(modal), user: ui.user }, submit);
  });
  backdrop.replaceChildren(modal);
  backdrop.hidden = false;
  showErrors(backdrop, open.errors || {});
}

function inputNode(block) {
  const wrap = el("div", "input-block");
  wrap.dataset.blockId = block.block_id || "";
  const element = block.element || {};
  const id = `input-${block.block_id}-${element.action_id}`;
  const label = el("label", null, (block.label && block.label.text) || "");
  label.htmlFor = id;
  if (block.optional) label.append(el("span", "hint", " (optional)"));
  wrap.append(label);
  let field;
  if (element.type === "plain_text_input") {
    field = document.createElement(element.multiline ? "textarea" : "input");
    if (element.initial_value) field.value = element.initial_value;
    if (element.max_length) field.maxLength = element.max_length;
    if (element.placeholder) field.placeholder = element.placeholder.text;
  } else if (element.type === "static_select" || element.type === "radio_buttons") {
    field = document.createElement("select");
    if (!element.initial_option) field.append(el("option", null, (element.placeholder && element.placeholder.text) || "Choose"));
    for (const option of element.options || []) {
      const item = el("option", null, option.text.text);
      item.value = option.value;
      field.append(item);
    }
    if (element.initial_option) field.value = element.initial_option.value;
  } else if (element.type === "datetimepicker") {
    field = document.createElement("input");
    field.type = "datetime-local";
    if (element.initial_date_time) {
      const when = new Date(element.initial_date_time * 1000);
      field.value = `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}T${pad(when.getHours())}:${pad(when.getMinutes())}`;
    }
  } else if (element.type === "datepicker") {
    field = document.createElement("input");
    field.type = "date";
    if (element.initial_date) field.value = element.initial_date;
  } else if (element.type === "timepicker") {
    field = document.createElement("input");
    field.type = "time";
    if (element.initial_time) field.value = element.initial_time;
  } else {
    field = el("span", "unsupported", `[${element.type}]`);
  }
  field.id = id;
  field.dataset.actionId = element.action_id || "";
  field.dataset.kind = element.type || "";
  wrap.append(field);
  if (block.hint) wrap.append(el("div", "hint", block.hint.text));
  wrap.append(el("div", "error"));
  return wrap;
}

// {block_id: {action_id: value}} for what was entered; empty inputs are left out.
function inputValues(form) {
  const values = {};
  for (const wrap of form.querySelectorAll(".input-block")) {
    const field = wrap.querySelector("[data-action-id]");
    if (!field || field.value === undefined || field.value === "") continue;
    if (field.tagName === "SELECT" && !field.selectedOptions[0].value) continue;
    let value = field.value;
    if (field.dataset.kind === "datetimepicker") value = Math.floor(new Date(field.value).getTime() / 1000);
    values[wrap.dataset.blockId] = { [field.dataset.actionId]: value };
  }
  return values;
}

function showErrors(backdrop, errors) {
  for (const wrap of backdrop.querySelectorAll(".input-block")) {
    wrap.querySelector(".error").textContent = errors[wrap.dataset.blockId] || "";
  }
}

// -- talking to the sandbox ------------------------------------------------------------------

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch (_) {
    return { ok: false, error: text };
  }
}

async function act(path, body, button) {
  if (button) button.disabled = true;
  try {
    const answer = await post(path, body);
    $("composer-note").textContent = answer.ok ? "" : `Not sent: ${answer.error}`;
    return answer;
  } finally {
    if (button) button.disabled = false;
    refresh();
  }
}

async function refresh() {
  if (ui.refreshing) {
    ui.again = true;
    return;
  }
  ui.refreshing = true;
  try {
    const response = await fetch(`/ui/state?user=${encodeURIComponent(ui.user)}`);
    ui.state = await response.json();
    render();
  } finally {
    ui.refreshing = false;
    if (ui.again) {
      ui.again = false;
      refresh();
    }
  }
}

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("command");
  const text = input.value.trim();
  if (!text) return;
  if (!text.startsWith("/")) {
    $("composer-note").textContent = "This workspace takes slash commands, e.g. /queue-status";
    return;
  }
  const answer = await act("/ui/command", { text, channel: ui.channel, user: ui.user });
  if (answer.ok) input.value = "";
});
$("close-thread").addEventListener("click", () => {
  ui.thread = null;
  render();
});

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-ts]");
  if (!link) return;
  event.preventDefault();
  ui.channel = link.dataset.channel;
  openThread(link.dataset.channel, link.dataset.ts);
});

const events = new EventSource("/ui/events");
events.addEventListener("change", () => refresh());
events.addEventListener("open", () => refresh());
refresh();
