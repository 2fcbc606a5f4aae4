// One self-contained HTML file: no scripts, no external resources; charts are inline SVG.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/analyze/report_writers.h"

namespace hpusim::analyze {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, const char* format = "%.3f") {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

const char* kHostColor = "#3b7dd8";
const char* kWaitColor = "#c7cdd6";
const char* kDeviceColor = "#e8833a";
const char* kIdleColor = "#f6d7bf";

// Per step two stacked bars: host (work, waiting) and device (busy, idle).
std::string steps_chart(const Report& r) {
  const size_t n = r.steps.size();
  const double width = 760, bar = std::min(28.0, 300.0 / std::max<size_t>(n, 1)), gap = bar * 0.6;
  uint64_t longest = 1;
  for (const StepMetrics& m : r.steps) longest = std::max(longest, m.duration_ns());
  const double scale = (width - 330) / static_cast<double>(longest);   // room for the label after the bar
  const double row = 2 * bar + gap;
  const double height = 40 + row * static_cast<double>(n) + 30;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << num(height, "%.0f")
      << "' role='img' aria-label='host and device time per step'>";
  double y = 30;
  for (const StepMetrics& m : r.steps) {
    const double host = static_cast<double>(m.host_busy_ns) * scale, wait = static_cast<double>(m.host_wait_ns) * scale;
    const double busy = static_cast<double>(m.device_busy_ns) * scale, idle = static_cast<double>(m.device_idle_ns) * scale;
    svg << "<text x='0' y='" << num(y + bar * 1.2, "%.1f") << "' font-size='12'>" << escape(m.name) << "</text>";
    svg << "<rect x='120' y='" << num(y, "%.1f") << "' width='" << num(host, "%.2f") << "' height='" << num(bar, "%.1f")
        << "' fill='" << kHostColor << "'><title>host work " << num(ms(m.host_busy_ns)) << " ms</title></rect>";
    svg << "<rect x='" << num(120 + host, "%.2f") << "' y='" << num(y, "%.1f") << "' width='" << num(wait, "%.2f")
        << "' height='" << num(bar, "%.1f") << "' fill='" << kWaitColor << "'><title>host waiting "
        << num(ms(m.host_wait_ns)) << " ms</title></rect>";
    svg << "<rect x='120' y='" << num(y + bar, "%.1f") << "' width='" << num(busy, "%.2f") << "' height='"
        << num(bar, "%.1f") << "' fill='" << kDeviceColor << "'><title>device busy " << num(ms(m.device_busy_ns))
        << " ms</title></rect>";
    svg << "<rect x='" << num(120 + busy, "%.2f") << "' y='" << num(y + bar, "%.1f") << "' width='"
        << num(idle, "%.2f") << "' height='" << num(bar, "%.1f") << "' fill='" << kIdleColor
        << "'><title>device idle " << num(ms(m.device_idle_ns)) << " ms</title></rect>";
    svg << "<text x='" << num(126 + host + wait, "%.1f") << "' y='" << num(y + bar * 1.2, "%.1f")
        << "' font-size='11'>" << num(ms(m.duration_ns())) << " ms " << escape(m.verdict) << "</text>";
    y += row;
  }
  const struct {
    const char* color;
    const char* label;
  } legend[] = {{kHostColor, "host work"}, {kWaitColor, "host waiting"}, {kDeviceColor, "device busy"},
                {kIdleColor, "device idle"}};
  double x = 120;
  for (const auto& l : legend) {
    svg << "<rect x='" << x << "' y='8' width='12' height='12' fill='" << l.color << "'/><text x='" << x + 16
        << "' y='18' font-size='12'>" << l.label << "</text>";
    x += 130;
  }
  svg << "</svg>";
  return svg.str();
}

// Horizontal bars, value in [0, max].
std::string bars(const std::vector<std::pair<std::string, double>>& rows, double max, const std::string& unit,
                 const char* color, const char* label) {
  const double bar = 16, width = 760;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='"
      << num(static_cast<double>(rows.size()) * (bar + 6) + 10, "%.0f") << "' role='img' aria-label='" << label << "'>";
  double y = 4;
  for (const auto& [name, value] : rows) {
    const double w = max > 0 ? value / max * (width - 360) : 0;
    svg << "<text x='0' y='" << num(y + 12, "%.0f") << "' font-size='12'>" << escape(name) << "</text>";
    svg << "<rect x='260' y='" << num(y, "%.0f") << "' width='" << num(w, "%.2f") << "' height='" << bar
        << "' fill='" << color << "'/>";
    svg << "<text x='" << num(266 + w, "%.1f") << "' y='" << num(y + 12, "%.0f") << "' font-size='11'>"
        << num(value, unit == "%" ? "%.1f" : "%.3f") << " " << unit << "</text>";
    y += bar + 6;
  }
  svg << "</svg>";
  return svg.str();
}

}  // namespace

void write_html(const Report& r, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>hpusim analyze: "
      << escape(r.source) << "</title>\n<style>"
      << "body{font-family:sans-serif;margin:24px;color:#1d2330;max-width:980px}"
      << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
      << ".verdict{font-size:18px;font-weight:bold;padding:8px 12px;border-radius:6px;display:inline-block}"
      << ".host-bound{background:#dbe8fb}.device-bound{background:#fde6d3}.balanced{background:#e3f3e0}"
      << "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #d0d4da;padding:3px 8px;text-align:right}"
      << "td:first-child,th:first-child{text-align:left}li{margin:6px 0}"
      << "</style></head><body>\n";
  out << "<h1>hpusim analyze: " << escape(r.source) << "</h1>\n";
  out << "<div class='verdict " << escape(r.verdict) << "'>" << escape(r.verdict) << "</div>\n";
  out << "<h2>Guidance</h2><ul>";
  for (const std::string& g : r.guidance) out << "<li>" << escape(g) << "</li>";
  out << "</ul>\n<h2>Host and device time per step</h2>\n" << steps_chart(r) << "\n";

  out << "<table><tr><th>step</th><th>step ms</th><th>host ms</th><th>wait ms</th><th>device ms</th>"
      << "<th>idle ms</th><th>idle for host ms</th><th>compiles</th><th>syncs</th><th>ops</th><th>verdict</th></tr>";
  const auto row = [&](const StepMetrics& m) {
    out << "<tr><td>" << escape(m.name) << "</td><td>" << num(ms(m.duration_ns())) << "</td><td>"
        << num(ms(m.host_busy_ns)) << "</td><td>" << num(ms(m.host_wait_ns)) << "</td><td>"
        << num(ms(m.device_busy_ns)) << "</td><td>" << num(ms(m.device_idle_ns)) << "</td><td>"
        << num(ms(m.idle_for_host_ns)) << "</td><td>" << m.compiles << "</td><td>" << m.syncs << "</td><td>" << m.ops
        << "</td><td>" << escape(m.verdict) << "</td></tr>";
  };
  for (const StepMetrics& m : r.steps) row(m);
  row(r.steady);
  out << "</table>\n";

  if (!r.engines.empty()) {
    std::vector<std::pair<std::string, double>> rows;
    for (const EngineUse& e : r.engines) rows.emplace_back(e.instance, 100.0 * e.busy_fraction);
    out << "<h2>Engine utilisation (steady steps)</h2>\n" << bars(rows, 100.0, "%", kDeviceColor, "engine utilisation");
  }
  if (!r.top_host.empty()) {
    std::vector<std::pair<std::string, double>> rows;
    for (size_t i = 0; i < r.top_host.size() && i < 10; ++i) rows.emplace_back(r.top_host[i].first, ms(r.top_host[i].second));
    out << "<h2>Top host costs per steady step</h2>\n" << bars(rows, rows.front().second, "ms", kHostColor, "top host costs");
  }
  if (!r.recompiles.empty()) {
    out << "<h2>Recompiles in steady steps</h2><table><tr><th>graph</th><th>compiles</th><th>what changed</th></tr>";
    for (const Recompile& c : r.recompiles) {
      out << "<tr><td>" << escape(c.graph) << "</td><td>" << c.compiles << "</td><td style='text-align:left'>"
          << escape(c.change) << "</td></tr>";
    }
    out << "</table>\n";
  }
  if (!r.fallbacks.empty()) {
    out << "<h2>CPU fallbacks</h2><table><tr><th>op</th><th>calls</th></tr>";
    for (const auto& [op, n] : r.fallbacks) out << "<tr><td>" << escape(op) << "</td><td>" << n << "</td></tr>";
    out << "</table>\n";
  }
  out << "</body></html>\n";
}

}  // namespace hpusim::analyze
