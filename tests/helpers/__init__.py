"""What the tests share: stand-ins (models, Hub, providers), servers, browsers, ports and fixtures."""
