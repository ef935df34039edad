"""MADQA dataset builder and loader: the sample benchmark, the page corpus and the Hub-format dataset."""
