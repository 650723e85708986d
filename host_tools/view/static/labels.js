// The player display's words, in each language a table may set in pit.toml
// (`language` of a [[table]], host_tools/pit/config.py LANGUAGES): "en",
// "zh" (the Chinese a Macau or Singapore floor reads: 庄 Banker, 闲 Player,
// 和 Tie) or "both" (the Chinese first, the English beside it). Only here;
// display.js asks label(language, key) for every word it draws.

const WORDS = {
  table: ["Table", "台"],
  limits: ["Limits", "限红"],
  shoe: ["Shoe", "靴"],
  hands: ["Hands", "局数"],
  last: ["Last hand", "上局"],
  last_results: ["Last results", "近期结果"],
  no_result: ["No hand yet", "未开局"],
  banker: ["Banker", "庄"],
  player: ["Player", "闲"],
  tie: ["Tie", "和"],
  banker_pair: ["Banker pair", "庄对"],
  player_pair: ["Player pair", "闲对"],
  natural: ["Natural", "例牌"],
  wins: ["wins", "赢"],
  bead_plate: ["Bead Plate", "珠盘路"],
  big_road: ["Big Road", "大路"],
  big_eye_boy: ["Big Eye Boy", "大眼仔"],
  small_road: ["Small Road", "小路"],
  cockroach_pig: ["Cockroach Pig", "曱甴路"],
  ask: ["Ask road", "问路"],
  ask_if: ["if the next hand is", "下局若为"],
  ask_none: ["not started", "未开始"],
  tie_mark: ["Tie (count if more)", "和局 (数字为次数)"],
  red_blue: ["red: repeats the Big Road's pattern, blue: breaks it", "红: 大路规律延续, 蓝: 规律改变"],
  offline: ["reconnecting\u2026", "重新连接\u2026"],
};

// The Bead Plate's and the strip's letter for each winner.
const BEAD = { en: { B: "B", P: "P", T: "T" }, zh: { B: "庄", P: "闲", T: "和" } };

export const LANGUAGES = ["en", "zh", "both"];

export function language(value) {
  return LANGUAGES.includes(value) ? value : "en";
}

export function label(lang, key) {
  const [en, zh] = WORDS[key];
  if (lang === "zh") return zh;
  if (lang === "both") return zh + " " + en;
  return en;
}

// One glyph per bead: Chinese when the table reads Chinese at all.
export function beadText(lang) {
  return lang === "en" ? BEAD.en : BEAD.zh;
}
