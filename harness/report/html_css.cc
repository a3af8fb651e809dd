#include "report/html_util.h"

namespace idem::html {

const char* css() {
  return R"css(
:root{--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--unk:#9a6700;--unk-bg:#fff8c5;
--err:#8250df;--err-bg:#fbefff;--na:#8c959f;--line:#d0d7de;--ink:#1f2328;--soft:#59636e;--pg:#0969da;--valkey:#bf3989;
--producer:#57606a;--hot:#fff1a8;--hold:#bc4c00;--held:#fb8f44}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);background:#f6f8fa}
main{max-width:1240px;margin:0 auto;padding:0 20px 40px}
code,pre,.mono,td.detail,td.step{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
header.top{display:flex;gap:20px;align-items:center;padding:22px 20px;margin:0 -20px 18px;border-bottom:1px solid var(--line);background:#fff}
header.top .badge{font-size:26px;font-weight:800;letter-spacing:.06em;padding:10px 22px;border-radius:10px;color:#fff;min-width:130px;text-align:center}
header.top.pass .badge{background:var(--pass)} header.top.fail .badge{background:var(--fail)}
header.top.unknown .badge{background:var(--unk)} header.top.error .badge{background:var(--err)}
header.top.long .badge{font-size:17px;max-width:170px;padding:10px 14px}
table.summary td.example{max-width:560px} table.summary td:nth-child(-n+3){white-space:nowrap} table.summary .msg{color:var(--soft);font-size:12.5px}
td.ok{color:var(--pass)} td.notok{color:var(--fail);font-weight:700}
header.top h1{margin:0;font-size:22px} header.top .sub{margin:3px 0 0;color:var(--soft)}
header.top .headline{margin:6px 0 0;font-size:15px}
section,article{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 18px;margin:0 0 18px}
h2{margin:0 0 10px;font-size:18px} h3{margin:0 0 8px;font-size:16px} h3 small{color:var(--soft);font-weight:400;margin-left:6px}
p.desc,div.desc,.note,.legend{color:var(--soft)} div.desc{font-size:11.5px}
table.matrix div.desc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11px}
.pill{display:inline-block;padding:1px 9px;border-radius:20px;font-size:12px;font-weight:700;color:#fff;vertical-align:1px;text-transform:uppercase}
.pill.pass{background:var(--pass)} .pill.fail{background:var(--fail)} .pill.unknown{background:var(--unk)}
.pill.error{background:var(--err)} .pill.na{background:var(--na)}
article.run.fail{border-left:5px solid var(--fail)} article.run.unknown{border-left:5px solid var(--unk)}
article.run.error{border-left:5px solid var(--err)}
ul.diag{list-style:none;padding:0;margin:6px 0 12px} ul.diag li{padding:8px 10px;margin:0 0 6px;background:var(--fail-bg);border-radius:6px}
ul.diag .msg{margin-top:3px;font-size:15px}
div.pattern{padding:8px 10px;margin:0 0 8px;border:1px solid var(--fail);border-radius:6px} div.pattern .msg{margin-top:3px} div.pattern .fix{margin-top:4px;color:var(--soft)} div.pattern.none{border-color:var(--line);color:var(--soft)}
.kind{display:inline-block;font-weight:700;color:var(--fail);text-transform:uppercase;font-size:12px;letter-spacing:.04em;margin-right:4px}
table{border-collapse:collapse;margin:6px 0 10px} th,td{border:1px solid var(--line);padding:5px 9px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
td.cell{font-weight:600;min-width:120px} td.cell a{color:inherit}
td.cell.pass{background:var(--pass-bg);color:var(--pass)} td.cell.fail{background:var(--fail-bg);color:var(--fail)}
td.cell.unknown{background:var(--unk-bg);color:var(--unk)} td.cell.error{background:var(--err-bg);color:var(--err)}
td.cell.na{color:var(--na);text-align:center;font-weight:400}
td.cell .count{display:block;font-weight:400;font-size:11.5px;opacity:.85} td.cell .pattern{display:block;font-weight:400;font-size:11.5px;font-style:italic}
table.matrix th.policy{font-weight:400;font-size:12px;color:var(--soft)} span.policy{font-size:12px;color:var(--soft)}
table.matrix td.cls{max-width:360px} tr.group td{background:#f6f8fa;font-weight:600;color:var(--soft)}
td.killcell{color:var(--fail);font-weight:700}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px;margin:8px 0}
details{margin:6px 0} details.more{margin:0 0 10px} details.more>summary{padding:8px 12px;background:#fff;
border:1px solid var(--line);border-radius:8px;font-weight:400;color:var(--ink)} details.more[open]>summary{margin-bottom:8px} summary{cursor:pointer;color:var(--soft);font-weight:600}
pre.log{background:#0d1117;color:#e6edf3;padding:8px 10px;border-radius:6px;overflow-x:auto;max-height:260px;margin:4px 0;white-space:pre-wrap}
tr.tail td{border-top:none;padding-top:0}
p.error{color:var(--err);font-weight:600}
.legend .k{font-weight:700} .k.producer{color:var(--producer)} .k.valkey{color:var(--valkey)} .k.pg{color:var(--pg)}
.k.kill{color:var(--fail)} .k.hot{color:#e3b341} .k.hold{color:var(--hold)} .k.release{color:var(--pass)}
footer{color:var(--soft);font-size:12.5px;padding:4px 2px}
footer a,section a,article a{color:var(--pg)}
svg.timeline{display:block;background:#fff}
svg.timeline text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11.5px;fill:var(--ink)}
svg.timeline text.lane{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-weight:700;font-size:12px;text-anchor:middle}
svg.timeline text.lane.server{fill:var(--soft)}
svg.timeline text.time{fill:var(--soft);text-anchor:end;font-size:10.5px}
svg.timeline text.t.hot{font-weight:700} svg.timeline text.t.kill{fill:var(--fail);font-weight:700}
svg.timeline text.elided{fill:var(--soft);font-style:italic}
svg.timeline rect.hotrow{fill:var(--hot);opacity:.55} svg.timeline rect.killrow{fill:var(--fail-bg)}
svg.timeline line.life{stroke:#8c959f;stroke-width:2} svg.timeline line.life.server{stroke:#d0d7de;stroke-width:1.5;stroke-dasharray:4 3}
svg.timeline line.call{stroke-width:1.2;opacity:.55} svg.timeline line.call.pg{stroke:var(--pg)}
svg.timeline line.call.dead{stroke:#8e44ad} svg.timeline .mark.dead,svg.timeline circle.srv.dead{fill:#8e44ad}
svg.timeline line.call.sink{stroke:#b7791f} svg.timeline .mark.sink,svg.timeline circle.srv.sink{fill:#b7791f}
svg.timeline circle.sinkcall.executed{fill:#b7791f} svg.timeline circle.sinkcall.replayed{fill:#fff;stroke:#b7791f;stroke-width:2}
svg.timeline rect.sinkcall.refused{fill:var(--fail)} svg.timeline line.calllink{stroke:#b7791f;stroke-width:1.2;stroke-dasharray:1 3}
svg.timeline line.call.valkey{stroke:var(--valkey)} svg.timeline line.call.send{stroke:var(--producer)}
svg.timeline line.call.withheld{stroke:var(--fail);stroke-dasharray:3 2;opacity:1}
svg.timeline .mark.pg{fill:var(--pg)} svg.timeline .mark.valkey{fill:var(--valkey)} svg.timeline .mark.send{fill:var(--producer)}
svg.timeline circle.srv.pg{fill:var(--pg)} svg.timeline circle.srv.valkey,svg.timeline circle.srv.send{fill:var(--valkey)} svg.timeline path.srv.send{fill:var(--producer)}
svg.timeline circle.spawn{fill:#fff;stroke:var(--pass);stroke-width:2.5}
svg.timeline path.kill{stroke:var(--fail);stroke-width:3.5;stroke-linecap:round}
svg.timeline line.exit{stroke:var(--ink);stroke-width:3}
svg.timeline rect.holdrow{fill:#fff1e5} svg.timeline text.t.hold{fill:var(--hold);font-weight:700}
svg.timeline g.hold rect{fill:var(--hold)} svg.timeline rect.held{fill:var(--held);opacity:.45}
svg.timeline rect.held.paused{fill:var(--hold);opacity:.3;stroke:var(--hold);stroke-dasharray:2 2}
svg.timeline path.release{fill:var(--pass)}
)css";
}

} // namespace idem::html
