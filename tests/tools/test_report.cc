// infer --report's page: its charts on their own, and the whole page as a real browser
// renders it (headless Chromium; the test skips, saying so, where none is installed).
#include "tools/infer_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(Report, HtmlEscapeWritesEveryMarkupCharacterAsAReference) {
  EXPECT_EQ(infer::html_escape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  EXPECT_EQ(infer::html_escape("plain"), "plain");
}

TEST(Report, HistogramHasOneBarPerBinAndALinePerMark) {
  std::vector<double> ms;
  for (int i = 0; i < 100; ++i) ms.push_back(1.0 + i % 10);
  const std::string svg = infer::histogram_svg(ms, {{"p50", 5}, {"p<99>", 10}});
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 10u);  // sqrt(100) bins
  EXPECT_EQ(count(svg, "<line class=\"mark\""), 2u);
  EXPECT_NE(svg.find("p&lt;99&gt; 10.000"), std::string::npos);
}

TEST(Report, ChartsOfEqualValuesDrawOneBinAndDoNotHang) {
  const std::vector<double> ms(50, 2.5);
  EXPECT_EQ(count(infer::histogram_svg(ms, {}), "<rect class=\"bar\""), 1u);
  const std::vector<double> starts(50, 0.0), zeros(50, 0.0);
  EXPECT_EQ(count(infer::timeline_svg(starts, zeros), "<circle"), 50u);
}

TEST(Report, TimelineShowsEachRunOrGroupsOfManyRuns) {
  std::vector<double> starts, ms;
  for (int i = 0; i < 5000; ++i) {
    starts.push_back(i * 0.001);
    ms.push_back(i == 4000 ? 50.0 : 1.0);
  }
  const std::string many = infer::timeline_svg(starts, ms);
  EXPECT_EQ(count(many, "<circle"), 0u);
  EXPECT_EQ(count(many, "<polyline"), 2u);
  EXPECT_NE(many.find("5000 runs in 1000 groups"), std::string::npos);
  starts.resize(300);
  ms.resize(300);
  EXPECT_EQ(count(infer::timeline_svg(starts, ms), "<circle class=\"point\""), 300u);
}

TEST(Report, BarChartLabelsEachBarWithItsShare) {
  const std::string svg = infer::bar_chart_svg({{"Conv", 3}, {"<Relu>", 1}});
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 2u);
  EXPECT_NE(svg.find("3.000 ms (75.0%)"), std::string::npos);
  EXPECT_NE(svg.find("&lt;Relu&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<Relu>"), std::string::npos);
}

// The first headless Chromium on PATH, or "".
std::string find_browser() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::vector<std::string> found;
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium-headless-shell", "chromium"})
      if (!dir.empty() && fs::exists(fs::path(dir) / name)) found.push_back((fs::path(dir) / name).string());
  return found.empty() ? "" : found.front();
}

// infer writes the page for the default model; Chromium loads it, runs its script and
// dumps the DOM it ends with: the charts are there, the script filled in the node count
// and got to its last line, and nothing raised.
TEST(Report, ThePageRendersInAHeadlessBrowser) {
  const std::string browser = find_browser();
  if (browser.empty())
    GTEST_SKIP() << "no chromium-headless-shell or chromium on PATH: scripts/setup.sh --browser installs it";
  const fs::path dir = fs::temp_directory_path() / ("ember_report_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path page = dir / "report.html", dom = dir / "dom.html";
  const std::string model = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";
  ASSERT_EQ(std::system((std::string(EMBER_INFER) + " " + model + " --repeat 30 --report " + page.string() +
                         " >" + (dir / "infer.txt").string() + " 2>&1")
                            .c_str()),
            0)
      << slurp(dir / "infer.txt");
  const std::string command = "timeout 60 " + browser + " --headless --no-sandbox --disable-gpu --user-data-dir=" +
                              (dir / "profile").string() + " --dump-dom file://" + page.string() + " >" +
                              dom.string() + " 2>" + (dir / "browser.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(dir / "browser.txt");
  const std::string html = slurp(dom);
  EXPECT_NE(html.find("data-rendered=\"ok\""), std::string::npos) << html.substr(0, 2000);
  EXPECT_EQ(html.find("data-error"), std::string::npos) << html.substr(0, 2000);
  EXPECT_EQ(count(html, "<svg"), 3u);
  EXPECT_GT(count(html, "<rect class=\"bar\""), 2u);
  EXPECT_EQ(count(html, "<circle class=\"point\""), 30u);
  const std::string written = slurp(page);
  const size_t table = written.find("<table id=\"nodes\">");
  ASSERT_NE(table, std::string::npos);
  const size_t nodes = count(written.substr(table, written.find("</table>", table) - table), "<tr><td>");
  EXPECT_GT(nodes, 0u);
  const std::string shown = std::to_string(nodes) + " of " + std::to_string(nodes) + " nodes shown";
  EXPECT_NE(html.find(shown), std::string::npos) << shown;  // written by the script
  fs::remove_all(dir);
}

}  // namespace
