package stress

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeCharts draws latency.png, ownership.png, failover.png and stages.png into the output directory
// and returns the names of the files written.
func writeCharts(rep Report, o Options) ([]string, error) {
	var files []string
	var errs []error
	for _, c := range []struct {
		name string
		draw func(Report, Options) (*plot.Plot, error)
	}{
		{"latency.png", latencyChart},
		{"ownership.png", ownershipChart},
		{"failover.png", failoverChart},
		{"stages.png", stagesChart},
	} {
		err := func() (err error) {
			// A chart that cannot be drawn costs its file, never the run's report.
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			p, err := c.draw(rep, o)
			if err == nil {
				err = p.Save(22*vg.Centimeter, 12*vg.Centimeter, filepath.Join(o.OutDir, c.name))
			}
			return err
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			continue
		}
		files = append(files, c.name)
	}
	return files, errors.Join(errs...)
}

// latencyChart is a histogram of copy latencies in milliseconds, on log scales: the fast
// path (milliseconds) and the repairs after faults (seconds) both show.
func latencyChart(rep Report, _ Options) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Copy latency: master event to follower order (n=%d, p50 %.1f ms, p99 %.1f ms, max %.1f ms)",
		rep.Latency.Samples, rep.Latency.P50ms, rep.Latency.P99ms, rep.Latency.MaxMs)
	p.X.Label.Text = "latency (ms, by the trade server's clock; log scale)"
	p.Y.Label.Text = "copies (log scale)"
	if len(rep.latencies) == 0 {
		p.Title.Text = "Copy latency: no copies"
		return p, nil
	}
	const floor = 0.01 // ms: zero latencies are drawn here
	lo, hi := math.Inf(1), 0.0
	vs := make([]float64, len(rep.latencies))
	for i, d := range rep.latencies {
		v := max(float64(d)/float64(time.Millisecond), floor)
		vs[i] = v
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi <= lo {
		hi = lo * 10
	}
	const n = 48
	ratio := math.Pow(hi/lo, 1.0/n)
	bins := make([]plotter.HistogramBin, n)
	for i := range bins {
		bins[i].Min = lo * math.Pow(ratio, float64(i))
		bins[i].Max = lo * math.Pow(ratio, float64(i+1))
	}
	for _, v := range vs {
		i := int(math.Log(v/lo) / math.Log(ratio))
		bins[min(max(i, 0), n-1)].Weight++
	}
	h := &plotter.Histogram{Bins: bins, FillColor: color.RGBA{R: 70, G: 110, B: 180, A: 255}, LineStyle: plotter.DefaultLineStyle, LogY: true}
	p.Add(h)
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	return p, nil
}

// faultColors gives every fault kind its color in the ownership chart.
var faultColors = map[FaultKind]color.RGBA{
	FaultKill:      {R: 200, A: 255},
	FaultFreeze:    {R: 30, G: 90, B: 220, A: 255},
	FaultCut:       {R: 230, G: 130, A: 255},
	FaultLatency:   {R: 150, G: 150, A: 255},
	FaultRestartDB: {R: 130, B: 160, A: 255},
	FaultBroker:    {G: 140, B: 90, A: 255},
}

// ownershipChart draws the followers each node held over time, with a dashed vertical
// line at the start of every fault (colored by kind).
func ownershipChart(rep Report, _ Options) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Followers held per node (database), faults marked at their start"
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "followers held"
	p.Legend.Top = true
	p.Legend.Left = true
	nodes := map[string]bool{}
	ymax := 1.0
	for _, s := range rep.Ownership {
		for n, c := range s.Counts {
			nodes[n] = true
			ymax = max(ymax, float64(c))
		}
		ymax = max(ymax, float64(s.Free))
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return nodeOrder(names[i]) < nodeOrder(names[j]) })
	for i, name := range names {
		pts := make(plotter.XYs, 0, len(rep.Ownership))
		for _, s := range rep.Ownership {
			pts = append(pts, plotter.XY{X: s.T, Y: float64(s.Counts[name])})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	if len(rep.Ownership) > 0 {
		pts := make(plotter.XYs, 0, len(rep.Ownership))
		for _, s := range rep.Ownership {
			pts = append(pts, plotter.XY{X: s.T, Y: float64(s.Free)})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 120}
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("unowned", l)
	}
	seen := map[FaultKind]bool{}
	for _, f := range rep.Faults {
		l, err := plotter.NewLine(plotter.XYs{{X: f.StartS, Y: 0}, {X: f.StartS, Y: ymax * 1.05}})
		if err != nil {
			return nil, err
		}
		l.Color = faultColors[f.Kind]
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Width = vg.Points(1)
		p.Add(l)
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: f.StartS, Y: ymax * 1.05}}, Labels: []string{kindLabel(f)}})
		if err == nil {
			for i := range lbl.TextStyle {
				lbl.TextStyle[i].Color = faultColors[f.Kind]
				lbl.TextStyle[i].Rotation = 1.5708
				lbl.TextStyle[i].XAlign = draw.XRight
			}
			p.Add(lbl)
		}
		if !seen[f.Kind] {
			seen[f.Kind] = true
			p.Legend.Add("fault: "+string(f.Kind), l)
		}
	}
	p.Y.Min = 0
	return p, nil
}

// nodeOrder sorts node-2 before node-10.
func nodeOrder(id string) int {
	var n int
	if _, err := fmt.Sscanf(id, "node-%d", &n); err == nil {
		return n
	}
	return 1 << 30
}

// failoverChart draws each kill's failover time against lease + interval.
func failoverChart(rep Report, _ Options) (*plot.Plot, error) {
	p := plot.New()
	fo := rep.Failover
	p.Title.Text = fmt.Sprintf("Failover after SIGKILL: p50 %.2fs, max %.2fs (lease + interval %.1fs)", fo.P50s, fo.MaxS, fo.BoundS)
	p.Y.Label.Text = "seconds until all its accounts were owned by others"
	if len(fo.Details) == 0 {
		p.Title.Text = "Failover after SIGKILL: no kill in this run"
		return p, nil
	}
	vs := make(plotter.Values, len(fo.Details))
	names := make([]string, len(fo.Details))
	for i, f := range fo.Details {
		vs[i] = max(f.Seconds, 0)
		names[i] = fmt.Sprintf("%s (%d)", f.Node, f.Accounts)
		if !f.Done {
			names[i] += " not done"
		}
	}
	bars, err := plotter.NewBarChart(vs, vg.Points(30))
	if err != nil {
		return nil, err
	}
	bars.Color = color.RGBA{R: 200, G: 60, B: 60, A: 255}
	p.Add(bars)
	p.NominalX(names...)
	bound, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: fo.BoundS}, {X: float64(len(vs)) - 0.5, Y: fo.BoundS}})
	if err != nil {
		return nil, err
	}
	bound.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(bound)
	p.Legend.Add("lease + interval", bound)
	limit, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: fo.LimitS}, {X: float64(len(vs)) - 0.5, Y: fo.LimitS}})
	if err != nil {
		return nil, err
	}
	limit.Color = color.RGBA{R: 200, A: 255}
	p.Add(limit)
	p.Legend.Add("limit (with slack)", limit)
	p.Y.Min = 0
	return p, nil
}

// stagesChart draws p50, p99 and max of every stage, for all copies and for the slow ones,
// on a log scale: the stage where slow copies wait stands out.
func stagesChart(rep Report, _ Options) (*plot.Plot, error) {
	p := plot.New()
	if rep.Stages == nil || rep.Stages.Traced == 0 {
		p.Title.Text = "Copy stages: no traced copies"
		return p, nil
	}
	s := rep.Stages
	p.Title.Text = fmt.Sprintf("Copy stages (%d copies; %d slow ≥ %.0f ms, most time in %s)", s.Traced, s.Slow.Copies, s.SlowMs, s.Slow.Dominant)
	p.Y.Label.Text = "ms (log scale)"
	const floor = 0.01
	names := make([]string, len(s.All.Stages))
	slow := map[string]StageStat{}
	for _, st := range s.Slow.Stages {
		slow[st.Stage] = st
	}
	series := []struct {
		label string
		value func(StageStat, StageStat) float64
		color color.RGBA
	}{
		{"p50", func(a, _ StageStat) float64 { return a.P50ms }, color.RGBA{R: 120, G: 170, B: 220, A: 255}},
		{"p99", func(a, _ StageStat) float64 { return a.P99ms }, color.RGBA{R: 40, G: 90, B: 180, A: 255}},
		{"max", func(a, _ StageStat) float64 { return a.MaxMs }, color.RGBA{R: 10, G: 30, B: 90, A: 255}},
		{"slow p50", func(_, b StageStat) float64 { return b.P50ms }, color.RGBA{R: 230, G: 150, B: 60, A: 255}},
		{"slow max", func(_, b StageStat) float64 { return b.MaxMs }, color.RGBA{R: 190, G: 40, B: 30, A: 255}},
	}
	w := vg.Points(7)
	for k, se := range series {
		// Bars grow from the floor: log10(ms/floor) on a linear axis whose ticks read ms
		// (a log axis cannot draw a bar's base).
		vs := make(plotter.Values, len(s.All.Stages))
		for i, st := range s.All.Stages {
			names[i] = st.Stage
			vs[i] = math.Log10(max(se.value(st, slow[st.Stage]), floor) / floor)
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		b.Color = se.color
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(k-len(series)/2)
		p.Add(b)
		p.Legend.Add(se.label, b)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	var ticks []plot.Tick
	for e := 0; e <= 7; e++ {
		ticks = append(ticks, plot.Tick{Value: float64(e), Label: strconv.FormatFloat(floor*math.Pow(10, float64(e)), 'g', -1, 64)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	return p, nil
}
