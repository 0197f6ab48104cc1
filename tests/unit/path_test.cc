// algorithms::choosePath, the one selection point: the profile's band sends a call to the
// shared-memory slots, to the direct algorithms, or to a message algorithm, by name where the
// rule names one; a rule's `algorithm=` is checked when the file is read.
#include <catch2/catch.hpp>

#include <vector>

#include "algorithms/host_groups.h"
#include "algorithms/path.h"
#include "tuning/plan_table.h"

using namespace ftcomm;
using algorithms::Collective;

namespace {

tuning::PlanTable tableOf(const std::string& rules, int ranks) {
  auto profile = tuning::parseProfile("profile t\n" + rules, "t.rules");
  REQUIRE(profile.ok());
  return tuning::PlanTable(*profile, ranks);
}

algorithms::PathQuery allreduce(std::size_t bytes, bool hasInline, bool peersReadable) {
  algorithms::PathQuery q;
  q.collective = Collective::kAllReduce;
  q.count = bytes / 4;
  q.dtype = DataType::kFloat32;
  q.bytes = bytes;
  q.ranks = 2;
  q.hasInline = hasInline;
  q.peersReadable = peersReadable;
  return q;
}

std::string errorOf(const std::string& rules) {
  auto profile = tuning::parseProfile("profile t\n" + rules, "t.rules");
  REQUIRE(!profile.ok());
  return profile.status().message();
}

}  // namespace

TEST_CASE("path: an inline band runs in the slots where the communicator has them") {
  const auto table = tableOf("allreduce * 0-1M inline\n* * * direct\n", 2);
  auto path = algorithms::choosePath(table, allreduce(64 << 10, true, true));
  REQUIRE(path.ok());
  CHECK(path->chunking.chunks > 0);
  CHECK(path->algorithm == nullptr);
  // Without slots (members on several hosts) the registry's default takes it.
  path = algorithms::choosePath(table, allreduce(64 << 10, false, false));
  REQUIRE(path.ok());
  CHECK(path->chunking.chunks == 0);
  REQUIRE(path->algorithm != nullptr);
  CHECK_FALSE(path->algorithm->readsPeers);
}

TEST_CASE("path: a direct band reads the peers' buffers where it can, a message band never") {
  const auto table = tableOf("allreduce * 0-1M direct\nallreduce * 1M- message\n", 2);
  auto path = algorithms::choosePath(table, allreduce(512 << 10, true, true));
  REQUIRE(path.ok());
  REQUIRE(path->algorithm != nullptr);
  CHECK(path->algorithm->name == "direct");
  path = algorithms::choosePath(table, allreduce(std::size_t{16} << 20, true, true));
  REQUIRE(path.ok());
  REQUIRE(path->algorithm != nullptr);
  CHECK_FALSE(path->algorithm->readsPeers);
}

TEST_CASE("path: a message band takes the algorithm its rule names") {
  const auto table = tableOf("allreduce 2 * message algorithm=recursive_doubling\n", 2);
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{64} << 20}) {
    auto path = algorithms::choosePath(table, allreduce(bytes, false, true));
    REQUIRE(path.ok());
    REQUIRE(path->algorithm != nullptr);
    CHECK(path->algorithm->name == "recursive_doubling");
  }
  // At 3 ranks the rule does not match: the default way past the last rule, direct.
  const auto three = tableOf("allreduce 2 * message algorithm=recursive_doubling\n", 3);
  auto q = allreduce(std::size_t{64} << 20, false, true);
  q.ranks = 3;
  auto path = algorithms::choosePath(three, q);
  REQUIRE(path.ok());
  CHECK(path->algorithm->name == "direct");
}

TEST_CASE("path: a rule's algorithm is checked when the file is read, naming the line") {
  CHECK(errorOf("allreduce 2 * message algorithm=bogus\n") ==
        "t.rules:2: 'bogus' is not a message algorithm of allreduce; known: ring "
        "recursive_doubling rabenseifner hierarchical hierarchical_split");
  CHECK(errorOf("allreduce 2 * message algorithm=direct\n")
            .rfind("t.rules:2: 'direct' is not a message algorithm of allreduce", 0) == 0);
  CHECK(errorOf("* 2 * message algorithm=ring\n") ==
        "t.rules:2: algorithm=ring needs a rule for one collective whose way is message");
  CHECK(errorOf("allreduce 2 * inline algorithm=ring\n") ==
        "t.rules:2: algorithm=ring needs a rule for one collective whose way is message");
}

TEST_CASE("path: a named algorithm survives the text members agree on") {
  auto profile =
      tuning::parseProfile("profile t\nbroadcast * 1M- message algorithm=binomial\n", "t.rules");
  REQUIRE(profile.ok());
  const std::string text = tuning::serialize(*profile);
  CHECK(text.find("algorithm=binomial") != std::string::npos);
  auto again = tuning::parseProfile(text, "agreed");
  REQUIRE(again.ok());
  CHECK(tuning::serialize(*again) == text);
  CHECK(tuning::profileHash(*again) == tuning::profileHash(*profile));
}

TEST_CASE("path: a band's segment reaches the algorithm, and survives the agreed text") {
  const auto table =
      tableOf("allreduce 2 <1M direct\nallreduce 2 1M- message algorithm=ring segment=768K\n", 2);
  auto path = algorithms::choosePath(table, allreduce(512 << 10, true, true));
  REQUIRE(path.ok());
  CHECK(path->segmentBytes == 0);
  path = algorithms::choosePath(table, allreduce(std::size_t{16} << 20, true, true));
  REQUIRE(path.ok());
  REQUIRE(path->algorithm != nullptr);
  CHECK(path->algorithm->name == "ring");
  CHECK(path->segmentBytes == 768u << 10);
  const std::string text = tuning::serialize(table.profile());
  CHECK(text.find("segment=768K") != std::string::npos);
  auto again = tuning::parseProfile(text, "agreed");
  REQUIRE(again.ok());
  CHECK(tuning::profileHash(*again) == table.hash());
  CHECK(errorOf("allreduce 2 * message segment=lots\n")
            .rfind("t.rules:2: 'segment=lots' is not an option", 0) == 0);
  CHECK(errorOf("allreduce 2 * direct segment=64K\n") ==
        "t.rules:2: segment= needs a rule whose way is message");
}

TEST_CASE(
    "path: across hosts the collectives are node-aware unless the profile turns it off, an "
    "allreduce split from its threshold") {
  auto query = allreduce(std::size_t{4} << 20, false, false);
  query.ranks = 4;
  query.spansHosts = true;
  auto chosen = [&](const std::string& rules) {
    auto path = algorithms::choosePath(tableOf(rules, 4), query);
    REQUIRE(path.ok());
    REQUIRE(path->algorithm != nullptr);
    return std::string(path->algorithm->name);
  };
  CHECK(chosen("* * * direct\n") == "hierarchical");
  CHECK(chosen("set node_aware_split_from 1M\n* * * direct\n") == "hierarchical_split");
  CHECK(chosen("set node_aware_split_from 8M\n* * * direct\n") == "hierarchical");
  CHECK(chosen("set node_aware_split_from off\n* * * direct\n") == "hierarchical");
  CHECK(chosen("set node_aware off\n* * * direct\n").rfind("hierarchical", 0) != 0);
  query.bytes = 8;
  CHECK(chosen("set node_aware_split_from 1M\n* * * direct\n") == "hierarchical");
  for (Collective c :
       {Collective::kBroadcast, Collective::kAllGather, Collective::kReduceScatter}) {
    query.collective = c;
    CHECK(chosen("* * * direct\n") == "hierarchical");
    CHECK(chosen("set node_aware off\n* * * direct\n") != "hierarchical");
  }
  // Other collectives, and a communicator on one host, keep their choices.
  query.collective = Collective::kAllToAll;
  CHECK(chosen("* * * direct\n") != "hierarchical");
  query = allreduce(std::size_t{4} << 20, false, false);
  auto path = algorithms::choosePath(tableOf("* * * direct\n", 2), query);
  REQUIRE(path.ok());
  CHECK(path->algorithm->name.rfind("hierarchical", 0) != 0);
}

TEST_CASE(
    "hosts: node-aware collectives apply where some host holds several members, and messages "
    "cross the network wherever the members are on more than one host") {
  using algorithms::severalHosts;
  using algorithms::spansHosts;
  const std::vector<int> oneHost = {0, 0, 0}, twoByOne = {0, 1}, twoByTwo = {0, 0, 1, 1};
  const std::vector<int> none;
  CHECK_FALSE(severalHosts(oneHost));
  CHECK_FALSE(spansHosts(oneHost));
  CHECK(severalHosts(twoByOne));
  CHECK_FALSE(spansHosts(twoByOne));
  CHECK(severalHosts(twoByTwo));
  CHECK(spansHosts(twoByTwo));
  CHECK_FALSE(severalHosts(none));
}
