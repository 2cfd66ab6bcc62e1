#include "saturn/bench/report.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"

namespace saturn::bench {

namespace {

const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};

}  // namespace

std::string bar_chart(const std::string& title, const std::vector<std::string>& groups,
                      const std::vector<std::string>& series,
                      const std::vector<std::vector<double>>& values, double x0, double y0) {
  const double width = 900, height = 260, left = 50, bottom = 60;
  double top = 1;
  for (const auto& row : values)
    for (double v : row) top = std::max(top, v);
  top = std::ceil(top / 5) * 5;
  std::string s = fmt::format("<g transform=\"translate({},{})\">\n", x0, y0);
  s += fmt::format("<text x=\"{}\" y=\"15\" font-size=\"14\">{}</text>\n", left, title);
  const double plot_h = height - bottom - 25, plot_w = width - left - 10;
  auto y_of = [&](double v) { return 25 + plot_h * (1 - std::max(v, 0.0) / top); };
  for (int t = 0; t <= 5; ++t) {
    double v = top * t / 5;
    s += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n",
                     left, left + plot_w, y_of(v), y_of(v));
    s += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.0f}%</text>\n",
        left - 4, y_of(v) + 3, v);
  }
  const double group_w = plot_w / static_cast<double>(std::max<std::size_t>(groups.size(), 1));
  const double bar_w = group_w * 0.8 / static_cast<double>(std::max<std::size_t>(series.size(), 1));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t k = 0; k < series.size(); ++k) {
      double v = values[g][k];
      double x = left + g * group_w + group_w * 0.1 + k * bar_w;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x,
          y_of(v), bar_w, y_of(0) - y_of(v), kColors[k % 5]);
    }
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
        left + (g + 0.5) * group_w, y_of(0) + 14, groups[g]);
  }
  for (std::size_t k = 0; k < series.size(); ++k) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n",
                     left + k * 110, height - 25, kColors[k % 5]);
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", left + k * 110 + 14,
                     height - 16, series[k]);
  }
  return s + "</g>\n";
}

std::string svg_page(const std::string& charts, double height, const std::string& footer) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"920\" height=\"{}\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"{}\" font-size=\"10\">{}</text>\n{}</svg>\n",
      height + 20, height + 10, footer, charts);
}

}  // namespace saturn::bench
