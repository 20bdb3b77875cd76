"""The rates chart of the run screen: throughput and retries per second, concurrency changes marked."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from arenatui.config.schema import JUDGE_LANE_PREFIX
from arenatui.kernel.text import printable
from arenatui.tui.widgets.matrix import JUDGE_MARK, middle_cut
from arenatui.tui.widgets.sparkline import tall_spark
from arenatui.tui.widgets.status_bar import clock


class RatesChart(Widget):
    """Throughput and retries per second over the whole run, across the full width, with every concurrency
    change (global ▲/▼, a model's cap ◆) marked below at its moment."""

    DEFAULT_CSS = """
    RatesChart { height: 1fr; min-height: 3; }
    RatesChart > .rates--throughput { color: $arena-chart; }
    RatesChart > .rates--retry { color: $arena-chart-retry; }
    RatesChart > .rates--marker { color: $arena-marker; text-style: bold; }
    RatesChart > .rates--label { color: $arena-muted; }
    """
    COMPONENT_CLASSES = {"rates--throughput", "rates--retry", "rates--marker", "rates--label"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._data: tuple[tuple[float, ...], tuple[float, ...], float, tuple[tuple[float, int, int, str | None, str],
                                                                             ...]] = ((), (), 1.0, ())
        self._per_model: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def update_series(self, throughput: tuple[float, ...], retries: tuple[float, ...], step_s: float,
                      markers: tuple[tuple[float, int, int, str | None, str], ...],
                      per_model: tuple[tuple[str, tuple[float, ...]], ...] = ()) -> None:
        """The run's series; `per_model` (model key, calls per second over the last seconds) is drawn as one
        row per model under the run's chart when the pane is tall enough for it."""
        data = (throughput, retries, step_s, markers)
        per_model = tuple((printable(k, newlines=False), v) for k, v in per_model)
        if data != self._data or per_model != self._per_model:
            self._data = data
            self._per_model = per_model
            self.refresh()

    def render(self) -> Text:
        thr, ret, step, markers = self._data
        narrow = self.size.width < 60
        label_w = 8 if narrow else 12
        w = max(10, self.size.width - label_w)
        rows = max(3, self.size.height)
        # rows: calls/s chart, retry/s chart, the concurrency marks, and the time axis when there is room;
        # a tall pane also gets one row per model (its calls/s over the last minute) below those
        n_models = len(self._per_model)
        per_model = self._per_model if n_models and rows >= 10 + n_models else ()
        per_h = max(1, min(4, (rows - 15) // n_models)) if per_model else 0
        if per_model:
            rows -= n_models * per_h + 1
        axis = rows >= 6
        avail = rows - 1 - axis
        thr_h = max(1, min(12, (avail * 2 + 2) // 3))
        ret_h = max(1, min(6, avail - thr_h)) if avail > thr_h else 0
        # the series fills the width: fewer points than columns are stretched, not padded on the left
        n = max(1, len(thr))
        reps = max(1, w // n) if len(thr) <= w else 1
        thr_s = [v for v in thr for _ in range(reps)]
        ret_s = [v for v in ret for _ in range(reps)]
        lab = self.get_component_rich_style("rates--label", partial=True)
        peak = max(thr, default=0.0)
        rpeak = max(ret, default=0.0)
        out = Text(no_wrap=True, overflow="crop")
        for i, line in enumerate(tall_spark(thr_s, w, thr_h)):
            name = ("calls/s" if i == 0 else "") if not narrow else ("calls/s" if i == 0 else f"{peak:.0f}" if i == 1
                                                                  else "")
            top = f"{peak:>4.0f} " if i == 0 and not narrow else ""
            out.append(f"{name:<{label_w - len(top)}}{top}"[:label_w], lab)
            out.append(line, self.get_component_rich_style("rates--throughput", partial=True))
            out.append("\n")
        for i, line in enumerate(tall_spark(ret_s, w, ret_h, top=max(rpeak, 1.0)) if ret_h else []):
            out.append((f"{'retry/s':<{label_w - 5}}{rpeak:>4.0f} " if i == 0 and not narrow else
                        "retry/s " if i == 0 else " " * label_w)[:label_w].ljust(label_w), lab)
            out.append(line, self.get_component_rich_style("rates--retry", partial=True))
            out.append("\n")
        # every knob change at its moment: ▲/▼ global (labelled with the new target), ◆ a model's cap
        used = len(thr) * reps if len(thr) <= w else w
        offset = w - used
        scale = reps if len(thr) <= w else w / n
        marks = [" "] * w
        # one glyph per column (the latest change there), then each global change's new target after its glyph
        # only where that many cells are free: a burst of changes never runs its numbers into each other
        glyphs: dict[int, tuple[str, str]] = {}
        for t, old, new, model_key, _source in markers:
            x = min(w - 1, offset + int(t / max(step, 1e-9) * scale))
            glyphs[x] = ("◆", "") if model_key is not None else ("▲" if new >= old else "▼", str(new))
        for x, (glyph, _) in glyphs.items():
            marks[x] = glyph
        for x, (_, label) in sorted(glyphs.items()):
            cells = range(x + 1, x + 1 + len(label))
            if label and cells.stop <= w and all(marks[c] == " " for c in range(x + 1, min(w, cells.stop + 1))):
                marks[cells.start: cells.stop] = list(label)
        out.append(f"{'conc.' if narrow else 'concurrency':<{label_w}}", lab)
        out.append("".join(marks), self.get_component_rich_style("rates--marker", partial=True))
        if axis:
            span = len(thr) * step
            out.append("\n")
            out.append(f"{'':<{label_w}}{'-' + clock(span):<{max(1, w - 3)}}now", lab)
        if per_model:
            n_pts = max(len(v) for _k, v in per_model)
            out.append("\n")
            out.append(f"{'per model: calls/s':<{label_w}} over the last {n_pts} s (one scale)", lab)
            scale_top = max((max(v, default=0.0) for _k, v in per_model), default=0.0)
            style = self.get_component_rich_style("rates--throughput", partial=True)
            # a judge lane by its judge's name: "judge:gr" would say less than "⚖ grader"
            names = [JUDGE_MARK + k.removeprefix(JUDGE_LANE_PREFIX) if k.startswith(JUDGE_LANE_PREFIX) else k
                     for k, _v in per_model]
            # the names as long as they are, up to a third of the pane: never "sim-lar" with room to spare
            name_w = max(label_w, min(max(len(n) for n in names) + 1, self.size.width // 3))
            for name, (_key, series) in zip(names, per_model, strict=True):
                for r, line in enumerate(tall_spark(series, max(10, self.size.width - name_w), per_h,
                                                    top=scale_top)):
                    out.append("\n")
                    out.append(f"{middle_cut(name, name_w - 1) if r == 0 else '':<{name_w}}", lab)
                    out.append(line, style)
        return out

