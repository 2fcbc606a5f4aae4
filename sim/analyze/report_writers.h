// The analyser's report as text (the terminal), JSON (tools, CI) and one self-contained HTML file
// (inline SVG charts: host and device time per step, engine utilisation, the top host costs).
#pragma once

#include <ostream>

#include "sim/analyze/step_analysis.h"

namespace hpusim::analyze {

void write_text(const Report& report, std::ostream& out);
void write_json(const Report& report, std::ostream& out);
void write_html(const Report& report, std::ostream& out);

}  // namespace hpusim::analyze
