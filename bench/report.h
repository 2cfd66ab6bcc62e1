// Shared by the benchmark binaries: the grouped bar chart of their SVG
// plots.
#pragma once

#include <string>
#include <vector>

namespace saturn::bench {

// Grouped bars as an SVG group at (x0, y0), 900 x 260: for each group (a
// model) one bar per series (a strategy); values are percentages (negative
// ones are drawn as zero).
std::string bar_chart(const std::string& title, const std::vector<std::string>& groups,
                      const std::vector<std::string>& series,
                      const std::vector<std::vector<double>>& values, double x0, double y0);

// A whole SVG document, 920 wide: the charts stacked above `height`, then a
// footer line (the machine the figures were measured on).
std::string svg_page(const std::string& charts, double height, const std::string& footer);

}  // namespace saturn::bench
