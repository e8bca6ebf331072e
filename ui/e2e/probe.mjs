import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSession, sleep, startDriver } from "./webdriver.mjs";
const home = mkdtempSync(join(tmpdir(), "probe-"));
const driver = await startDriver();
const sess = await openSession(driver, process.env.BURROW_APP, ["--home", home, "--no-workspace", "--no-model"]);
await sess.until("ready", "return document.body.dataset.ready === '1';");
await sess.exec("const b = document.createElement('button'); b.id='pb'; b.textContent='Go'; b.style.cssText='position:fixed;left:100px;top:300px'; b.onclick=()=>window.__c=(window.__c||0)+1; document.body.append(b); const o = document.createElement('div'); o.style.cssText='position:fixed;left:0;top:250px;width:400px;height:200px;background:rgba(0,0,0,.2)'; o.onclick=()=>window.__o=(window.__o||0)+1; document.body.append(o);");
try { await sess.click("#pb"); console.log("covered click: no error; button", await sess.exec("return window.__c"), "overlay", await sess.exec("return window.__o")); } catch (e) { console.log("covered click error:", String(e).slice(0, 200)); }
await sess.close();
await driver.stop();
