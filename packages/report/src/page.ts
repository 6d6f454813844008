/**
 * The page's style sheet and script, inlined into every report: a report is one file that opens
 * from `file://` with no network, so nothing is fetched. The script only wires clicks to the
 * details panel and the story; every lane is already drawn in the HTML.
 */

export const STYLE = `
:root{--label:12rem;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--sel:#0969da;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
*{box-sizing:border-box}
body{margin:0;padding:1rem}
h1{font-size:1.3rem;margin:0 0 .25rem}
h2{font-size:1rem;margin:.5rem 0}
header p{margin:0 0 .5rem;color:var(--muted)}
.layout{display:grid;grid-template-columns:minmax(0,1fr) 24rem;gap:1rem;align-items:start}
@media (max-width:900px){.layout{grid-template-columns:minmax(0,1fr)}:root{--label:8.5rem}body{padding:.5rem}}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px}
.chart{position:relative;min-width:40rem}
.group{border-top:1px solid var(--line)}
.group>h3{margin:0;padding:.25rem .5rem;font-size:.85rem;background:#f6f8fa;position:sticky;left:0}
.row{display:grid;grid-template-columns:var(--label) minmax(0,1fr);min-height:1.6rem;border-top:1px solid #eaeef2}
.row>.name{position:sticky;left:0;z-index:2;background:var(--bg);padding:.2rem .5rem;font-size:.75rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;border-right:1px solid var(--line)}
.row>.name small{display:block;color:var(--muted)}
.track{position:relative;min-height:1.6rem}
.row.chain .track{height:3.2rem}
.it{position:absolute;top:.2rem;bottom:.2rem;margin:0;padding:0;border:0;cursor:pointer;font:inherit;font-size:.7rem;line-height:1.2rem;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;color:#fff}
.it:focus-visible,.it.sel{outline:3px solid var(--sel);outline-offset:1px;z-index:3}
.sp{min-width:3px;padding:0 .25rem;text-align:left;border-radius:3px}
.tk{width:3px;margin-left:-1px;background:var(--muted)}
.tk.write{background:#0550ae}.tk.failed,.tk.delete,.tk.tombstone{background:var(--bad)}.tk.lock-wait{background:var(--warn)}
.tk.create,.tk.add{background:var(--ok)}.tk.update{background:#8250df}.tk.fault{background:var(--warn);width:5px}
.sp.running{background:var(--ok)}.sp.terminating{background:var(--warn)}.sp.crashed{background:var(--bad);background-image:repeating-linear-gradient(45deg,transparent 0 4px,rgba(255,255,255,.3) 4px 8px)}
.sp.restarting{background:#bf8700;color:#000}.sp.stopped{background:#8c959f}
.sp.gap,.sp.relist,.sp.fault{background:rgba(154,103,0,.18);color:var(--fg);border:1px dashed var(--warn)}
.sp.ok{background:var(--ok)}.sp.failed{background:var(--bad);background-image:repeating-linear-gradient(-45deg,transparent 0 4px,rgba(255,255,255,.25) 4px 8px)}
svg.steps{position:absolute;inset:.3rem 0 .3rem 0;width:100%;height:calc(100% - .6rem);overflow:visible}
svg.steps path{fill:none;stroke:#0550ae;stroke-width:2;vector-effect:non-scaling-stroke}
.empty{position:absolute;top:0;bottom:0;background:rgba(207,34,46,.12);border-left:2px solid var(--bad);color:var(--bad);font-size:.7rem;font-weight:600;padding-left:.2rem;pointer-events:none;overflow:hidden;white-space:nowrap}
.pt{width:7px;height:7px;top:auto;bottom:auto;margin:-3px 0 0 -3px;border-radius:50%;background:#0550ae}
.axis .track{height:1.6rem}
.axis span{position:absolute;top:.2rem;font-size:.7rem;color:var(--muted);transform:translateX(-50%);white-space:nowrap}
.axis span.first{transform:none}
.marker{position:absolute;top:1.7rem;bottom:0;width:0;border-left:2px solid var(--bad);z-index:4;pointer-events:none}
.marker.finding{border-left-style:dashed}
.marker button{pointer-events:auto;position:absolute;top:.15rem;left:2px;background:var(--bad);color:#fff;border:0;border-radius:0 3px 3px 0;font:inherit;font-size:.7rem;font-weight:700;padding:.1rem .3rem;cursor:pointer;white-space:nowrap}
.marker.near-end button{left:auto;right:2px;border-radius:3px 0 0 3px}
.legend{font-size:.75rem;color:var(--muted);margin:.4rem 0}
aside{position:sticky;top:.5rem;max-height:calc(100vh - 1rem);display:flex;flex-direction:column;gap:.5rem}
@media (max-width:900px){aside{position:static;max-height:none}}
#details{border:1px solid var(--line);border-radius:6px;padding:.5rem;font-size:.8rem;overflow:auto;max-height:50vh}
#details pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.4rem;margin:.3rem 0;font-size:.72rem}
#details .add{color:#116329}#details .del{color:#82071e}
#story{position:relative;border:1px solid var(--line);border-radius:6px;overflow:auto;font-size:.78rem;flex:1;min-height:12rem}
#story ol{margin:0;padding:.3rem .3rem .3rem 2.6rem}
#story li{padding:.05rem 0}
#story li button{all:unset;cursor:pointer;display:block;word-break:break-word}
#story li button:focus-visible{outline:2px solid var(--sel)}
#story li.cur{background:#ddf4ff;outline:1px solid var(--sel)}
#story li.violation{color:var(--bad);font-weight:600}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
`;

/** The client script: click an item or a story line → details, story and timeline in step. */
export const SCRIPT = `
  (function(){
  var data=JSON.parse(document.getElementById('report-data').textContent);
  var byE={};data.details.forEach(function(d){byE[d.e]=d;});
  var changes=data.changes;var nodes=data.nodes;
  var panel=document.getElementById('details');
  var current=[];var curStory=null;
  function el(tag,cls,text){var x=document.createElement(tag);if(cls)x.className=cls;if(text!==undefined)x.textContent=text;return x;}
  function diffPre(text){var pre=el('pre','diff');text.split('\\n').forEach(function(l){if(l==='')return;var s=el('span',l.charAt(0)==='+'?'add':l.charAt(0)==='-'?'del':'',l+'\\n');pre.appendChild(s);});return pre;}
  function rulesAt(d){var out=[];nodes.forEach(function(n){var last=null;for(var i=0;i<changes.length;i++){var c=changes[i];if(c.step>d.step)break;if(c.node===n)last=c;}out.push({node:n,change:last});});return out;}
  function select(e,fromStory){
  var d=byE[e];if(!d)return;
  current.forEach(function(x){x.classList.remove('sel');});
  current=Array.prototype.slice.call(document.querySelectorAll('.chart [data-e="'+e+'"]'));
  current.forEach(function(x){x.classList.add('sel');});
  if(fromStory&&current[0])current[0].scrollIntoView({block:'nearest',inline:'center'});
  if(curStory){curStory.classList.remove('cur');curStory.removeAttribute('aria-current');}
  curStory=d.story===null?null:document.getElementById('s-'+d.story);
  if(curStory){curStory.classList.add('cur');curStory.setAttribute('aria-current','true');if(!fromStory){var box=document.getElementById('story');box.scrollTop=Math.max(0,curStory.offsetTop-box.clientHeight/2);}}
  panel.textContent='';
  panel.appendChild(el('h2',null,'t='+d.t+'ms · step '+d.step));
  panel.appendChild(el('p','what',d.text));
  if(d.story!==null){var p=el('p','story-line');var b=el('button',null,'story line '+d.story);b.type='button';b.addEventListener('click',function(){var li=document.getElementById('s-'+d.story);if(li){li.scrollIntoView({block:'nearest'});li.querySelector('button').focus();}});p.appendChild(b);var li=document.getElementById('s-'+d.story);if(li)p.appendChild(document.createTextNode(': '+li.textContent));panel.appendChild(p);}
  if(d.hops){panel.appendChild(el('h3',null,'Packet trace, hop by hop'));panel.appendChild(el('pre','hops',d.hops));}
  var h=el('h3',null,'Ruleset diff at this instant');panel.appendChild(h);
  rulesAt(d).forEach(function(r){var sec=el('div','rules');sec.setAttribute('data-node',r.node);
  if(r.change===null){sec.appendChild(el('p',null,r.node+': no rules changed before this instant'));}
  else{var same=r.change.step===d.step;sec.appendChild(el('p',null,r.node+': '+(same?'changed at this step':'unchanged at this step; last change at t='+r.change.t+'ms (step '+r.change.step+')')+' by '+r.change.agent));sec.appendChild(diffPre(r.change.diff));}
  panel.appendChild(sec);});
  }
  document.addEventListener('click',function(ev){var t=ev.target;if(!(t instanceof Element))return;var x=t.closest('[data-e]');if(!x)return;select(Number(x.getAttribute('data-e')),!!x.closest('#story'));});
  })();
`;
