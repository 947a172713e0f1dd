// What an evgate command is: an entry of the command table (cli.cpp) saying its name, its
// summary, what it needs loaded and its own options, and the handler that does its work. The
// opening every command shares (parse strictly, answer --help, load the suite, claim it for
// ctest, load the receipt, open the fixture store) is done here, once, from the entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <gsl/gsl>

#include "fixtures/fixture_store.hpp"
#include "inputs/suite_config.hpp"
#include "runs/receipt.hpp"

namespace evgate {

using Args = std::vector<std::string>;

// What a command needs before its handler starts (ninja's `when`); each level holds the one
// before it, loaded in this order.
enum class Loads {
    nothing,        // its operands name its files
    suite,          // --suite: suite.json, its evidence directory claimed for the ctest that runs it
    receipt,        // and the receipt the receipt step wrote
    fixture_store,  // and the fixture store, a restore a killed run left pending completed
};

// What a command accepts besides --suite (every command that loads a suite takes it) and --help.
struct Options {
    boost::program_options::options_description named{"options"};
    // Words without an option name, and the option each goes to (history's inputs, diff's files).
    boost::program_options::positional_options_description operands;
    std::string synopsis;  // how the operands read in the usage line: "<local.json> <runner.json>"
};

// A command's options, parsed, and what its entry said it needs, loaded.
class Invocation {
public:
    Invocation(boost::program_options::variables_map options, Loads loads);

    bool has(const char* option) const { return options_.count(option) > 0; }
    template <typename T>
    const T& get(const char* option) const {
        return options_[option].as<T>();
    }
    // What the entry did not ask for is a mistake in the table, not the user's.
    const SuiteConfig& suite() const {
        Expects(suite_.has_value());
        return *suite_;
    }
    const Receipt& receipt() const {
        Expects(receipt_.has_value());
        return *receipt_;
    }
    FixtureStore& store() {
        Expects(store_.has_value());
        return *store_;
    }

private:
    boost::program_options::variables_map options_;
    std::optional<SuiteConfig> suite_;
    std::optional<Receipt> receipt_;
    std::optional<FixtureStore> store_;
};

struct Command {
    const char* name;
    Loads loads;                             // loaded before the handler runs
    void (*options)(Options& accepted);      // its own options; nullptr: none
    int (*handler)(Invocation& invocation);  // writes to std::cout, throws its errors; returns the exit status
    const char* summary;                     // its line in `evgate --help`, and the heading of its own
};

// Parses `args` (the words after the command's name) as `command` accepts them, strictly: no
// guessing of abbreviated names. Prints the command's help (and returns 0) after --help;
// else loads what the command needs and runs its handler. Throws what they throw.
int run_command(const Command& command, const Args& args);

// The command's --help text.
std::string command_help(const Command& command);

// "evgate: <suite>: restored fixture groups left dirty by an interrupted run ..." when
// `restored` completed one (any step that takes the tree first does; ctest -V shows which).
void say_restored(const SuiteConfig& suite, const InterruptedRestore& restored);

}  // namespace evgate
