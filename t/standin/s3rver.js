// t/standin/s3rver.js - npm's s3rver (t/node_modules, installed by make
// deps) on 127.0.0.1 with a port the system picks, for the tests of large
// objects on S3 (t0233). Its data in --directory, the port written to
// --port-file once it listens; the bucket --bucket made at start; each
// request's method, path and signing headers appended to --log (one JSON
// object a line), so that a test can look at what aptix sent.
'use strict';

const fs = require('fs');
const path = require('path');

const args = {};
for (let i = 2; i < process.argv.length; i += 2)
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

const S3rver = require(path.join(__dirname, '..', 'node_modules', 's3rver'));
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: args.directory,
  configureBuckets: [{ name: args.bucket, configs: [] }],
});

server.run().then((addr) => {
  server.httpServer.prependListener('request', (req) => {
    const h = req.headers;
    fs.appendFileSync(args.log, JSON.stringify({
      method: req.method,
      path: req.url,
      authorization: h.authorization || null,
      'x-amz-date': h['x-amz-date'] || null,
      'x-amz-content-sha256': h['x-amz-content-sha256'] || null,
      'if-none-match': h['if-none-match'] || null,
    }) + '\n');
  });
  fs.writeFileSync(args['port-file'] + '.tmp', String(addr.port));
  fs.renameSync(args['port-file'] + '.tmp', args['port-file']);
}, (err) => {
  console.error(err);
  process.exit(1);
});
