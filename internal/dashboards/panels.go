package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Selectors of the template variables. vLLM-style families carry
// model_name; the HTTP families and up only carry the target's labels.
const (
	engineSel   = `{instance=~"$instance", model_name=~"$model_name"}`
	instanceSel = `{instance=~"$instance"}`
	rateRange   = "[$__rate_interval]"
)

// promQueryBuilder is a Prometheus target under construction.
type promQueryBuilder = prometheus.DataqueryBuilder

func ptr[T any](v T) *T { return &v }

// datasource points every query at the dashboard's datasource variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}
}

// variables are the dashboard's template variables: the Prometheus
// datasource, then instance and model_name read from a gauge glassbox (and
// vLLM) always exports.
func variables() []cog.Builder[dashboard.VariableModel] {
	all := func(name, label, query string) cog.Builder[dashboard.VariableModel] {
		return dashboard.NewQueryVariableBuilder(name).Label(label).
			Query(dashboard.StringOrMap{String: ptr(query)}).Definition(query).
			Datasource(datasource()).Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).Multi(true).IncludeAll(true).AllValue(".*")
	}
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"),
		all("instance", "Instance", "label_values(vllm:num_requests_running, instance)"),
		all("model_name", "Model", `label_values(vllm:num_requests_running{instance=~"$instance"}, model_name)`),
	}
}

// q is one Prometheus target.
func q(ref, expr, legend string) *promQueryBuilder {
	return prometheus.NewDataqueryBuilder().RefId(ref).Expr(expr).LegendFormat(legend).Datasource(datasource())
}

// runbooks links a panel to the runbook sections of the alerts it explains.
func (c *Config) runbooks(alertNames ...string) []cog.Builder[dashboard.DashboardLink] {
	var out []cog.Builder[dashboard.DashboardLink]
	for _, a := range alertNames {
		out = append(out, dashboard.NewDashboardLinkBuilder("Runbook: "+a).
			Type(dashboard.DashboardLinkTypeLink).Url(c.runbookURL(a)).TargetBlank(true))
	}
	return out
}

// graph is a time-series panel of width w.
func graph(title, desc, unit string, w uint32, targets ...*promQueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).
		Datasource(datasource()).Height(8).Span(w).FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// thresholds are absolute colour steps: base colour, then (value, colour)
// pairs.
func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	out := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		out = append(out, dashboard.Threshold{Value: ptr(steps[i].(float64)), Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(out)
}

// rightAxis moves the series of query ref to a right-hand axis with its own
// unit and no threshold drawing, for overlays of two scales.
func rightAxis(p *timeseries.PanelBuilder, ref, unit string) {
	p.OverrideByQuery(ref, []dashboard.DynamicConfigValue{
		{Id: "custom.axisPlacement", Value: common.AxisPlacementRight},
		{Id: "unit", Value: unit},
		{Id: "custom.thresholdsStyle", Value: map[string]any{"mode": common.GraphThresholdsStyleModeOff}},
	})
}

// sloTile is a stat panel: the share of requests of histogram hist whose
// value was at most bound over the dashboard's range, read from the bucket
// le=bound (so bound must be a bucket bound; Config.Validate checks it).
func sloTile(title, hist, le string, alertNames []string, c *Config) *stat.PanelBuilder {
	expr := fmt.Sprintf(`sum(rate(%s_bucket{instance=~"$instance", model_name=~"$model_name", le="%s"}[$__range])) / sum(rate(%s_count%s[$__range]))`,
		hist, le, hist, engineSel)
	th := c.Thresholds // the bands: the doctor's slo_attained_low and slo_attained
	return stat.NewPanelBuilder().Title(title).
		Description(fmt.Sprintf("Share of requests within the bound over the selected time range, from the histogram's buckets. Red below %.4g%%, green from %.4g%%.",
			100*th.SLOAttainedLow, 100*th.SLOAttained)).
		Datasource(datasource()).Unit("percentunit").Decimals(1).Min(0).Max(1).Height(5).Span(6).
		ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(thresholds("red", th.SLOAttainedLow, "orange", th.SLOAttained, "green")).
		Links(c.runbooks(alertNames...)).
		WithTarget(q("A", expr, "").Instant())
}

// newBoard starts a dashboard with the common settings.
func newBoard(uid, title, desc string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).Uid(uid).Description(desc).
		Tags([]string{"glassbox", "vllm", "llm-serving"}).Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).Refresh("10s").Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).Variables(variables())
}
